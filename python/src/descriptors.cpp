// Every descriptor struct as a Python class, its fields read and written by name (C++ has no
// reflection: the field list is the one thing written per descriptor), and the enums they use.
#include "bindings.hpp"

namespace baracuda::python {

void bind_descriptors(nb::module_& m) {
  // Enums the library names (every value up to the name function's "?").
  bind_named_enum<UnaryKind>(m, "UnaryKind", unary_kind_name);
  bind_named_enum<BinaryKind>(m, "BinaryKind", binary_kind_name);
  bind_named_enum<TernaryKind>(m, "TernaryKind", ternary_kind_name);
  bind_named_enum<GatedKind>(m, "GatedKind", gated_kind_name);
  bind_named_enum<RandomKind>(m, "RandomKind", random_kind_name);
  bind_named_enum<Activation>(m, "Activation", activation_name);
  bind_named_enum<LossReduction>(m, "LossReduction", loss_reduction_name);
  bind_named_enum<PointwiseLossKind>(m, "PointwiseLossKind", pointwise_loss_name);
  bind_named_enum<RotaryLayout>(m, "RotaryLayout", rotary_layout_name);
  // ... and those it does not.
  nb::enum_<CausalAlignment>(m, "CausalAlignment")
      .value("top_left", CausalAlignment::top_left)
      .value("bottom_right", CausalAlignment::bottom_right);
  nb::enum_<SoftmaxKind>(m, "SoftmaxKind")
      .value("softmax", SoftmaxKind::softmax)
      .value("log_softmax", SoftmaxKind::log_softmax)
      .value("sparsemax", SoftmaxKind::sparsemax)
      .value("entmax15", SoftmaxKind::entmax15);
  nb::enum_<ReduceKind>(m, "ReduceKind")
      .value("sum", ReduceKind::sum)
      .value("mean", ReduceKind::mean)
      .value("prod", ReduceKind::prod)
      .value("amax", ReduceKind::amax)
      .value("amin", ReduceKind::amin)
      .value("max", ReduceKind::max)
      .value("min", ReduceKind::min)
      .value("argmax", ReduceKind::argmax)
      .value("argmin", ReduceKind::argmin)
      .value("var", ReduceKind::var)
      .value("std", ReduceKind::std)
      .value("norm", ReduceKind::norm)
      .value("logsumexp", ReduceKind::logsumexp)
      .value("any", ReduceKind::any)
      .value("all", ReduceKind::all)
      .value("count_nonzero", ReduceKind::count_nonzero)
      .value("var_mean", ReduceKind::var_mean);
  nb::enum_<ScanKind>(m, "ScanKind")
      .value("cumsum", ScanKind::cumsum)
      .value("cumprod", ScanKind::cumprod)
      .value("cummax", ScanKind::cummax)
      .value("cummin", ScanKind::cummin)
      .value("logcumsumexp", ScanKind::logcumsumexp);
  nb::enum_<SegmentForm>(m, "SegmentForm")
      .value("sorted_ids", SegmentForm::sorted_ids)
      .value("unsorted_ids", SegmentForm::unsorted_ids)
      .value("offsets", SegmentForm::offsets);
  nb::enum_<WeightMode>(m, "WeightMode").value("scalar", WeightMode::scalar).value("tensor", WeightMode::tensor);

  DescriptorClass<BinaryParamDescriptor>(m, "BinaryParamDescriptor")
      .field("dtype", &BinaryParamDescriptor::dtype)
      .field("shape", &BinaryParamDescriptor::shape)
      .field("weight_mode", &BinaryParamDescriptor::weight_mode)
      .field("weight", &BinaryParamDescriptor::weight)
      .field("weight_shape", &BinaryParamDescriptor::weight_shape);

  nb::class_<UnaryParameters>(m, "UnaryParameters")
      .def(nb::init<>())
      .def_rw("negative_slope", &UnaryParameters::negative_slope)
      .def_rw("alpha", &UnaryParameters::alpha)
      .def_rw("beta", &UnaryParameters::beta)
      .def_rw("threshold", &UnaryParameters::threshold)
      .def_rw("min_val", &UnaryParameters::min_val)
      .def_rw("max_val", &UnaryParameters::max_val)
      // (by value: baracuda.jax.call keys its plans on a descriptor's repr)
      .def("__repr__", [](const UnaryParameters& p) {
        return "UnaryParameters(negative_slope=" + std::to_string(p.negative_slope) +
               ", alpha=" + std::to_string(p.alpha) + ", beta=" + std::to_string(p.beta) +
               ", threshold=" + std::to_string(p.threshold) + ", min_val=" + std::to_string(p.min_val) +
               ", max_val=" + std::to_string(p.max_val) + ")";
      });
  DescriptorClass<UnaryDescriptor>(m, "UnaryDescriptor")
      .field("kind", &UnaryDescriptor::kind)
      .field("dtype", &UnaryDescriptor::dtype)
      .field("shape", &UnaryDescriptor::shape)
      .field("parameters", &UnaryDescriptor::parameters);

  DescriptorClass<BinaryDescriptor>(m, "BinaryDescriptor")
      .field("kind", &BinaryDescriptor::kind)
      .field("dtype", &BinaryDescriptor::dtype)
      .field("a_shape", &BinaryDescriptor::a_shape)
      .field("b_shape", &BinaryDescriptor::b_shape)
      .field("a_scalar", &BinaryDescriptor::a_scalar)
      .field("b_scalar", &BinaryDescriptor::b_scalar)
      .field("b_dtype", &BinaryDescriptor::b_dtype)
      .field("scalar_dtype", &BinaryDescriptor::scalar_dtype)
      .field("alpha", &BinaryDescriptor::alpha);

  DescriptorClass<TernaryDescriptor>(m, "TernaryDescriptor")
      .field("kind", &TernaryDescriptor::kind)
      .field("dtype", &TernaryDescriptor::dtype)
      .field("a_shape", &TernaryDescriptor::a_shape)
      .field("b_shape", &TernaryDescriptor::b_shape)
      .field("c_shape", &TernaryDescriptor::c_shape)
      .field("a_scalar", &TernaryDescriptor::a_scalar)
      .field("b_scalar", &TernaryDescriptor::b_scalar)
      .field("c_scalar", &TernaryDescriptor::c_scalar)
      .field("value", &TernaryDescriptor::value);

  DescriptorClass<CastDescriptor>(m, "CastDescriptor")
      .field("dtype", &CastDescriptor::dtype)
      .field("out_dtype", &CastDescriptor::out_dtype)
      .field("shape", &CastDescriptor::shape);
  DescriptorClass<FillDescriptor>(m, "FillDescriptor")
      .field("dtype", &FillDescriptor::dtype)
      .field("shape", &FillDescriptor::shape)
      .field("value", &FillDescriptor::value)
      .field("integer_value", &FillDescriptor::integer_value);

  DescriptorClass<GatedDescriptor>(m, "GatedDescriptor")
      .field("kind", &GatedDescriptor::kind)
      .field("dtype", &GatedDescriptor::dtype)
      .field("shape", &GatedDescriptor::shape);

  DescriptorClass<GatherDescriptor>(m, "GatherDescriptor")
      .field("dtype", &GatherDescriptor::dtype)
      .field("index_dtype", &GatherDescriptor::index_dtype)
      .field("src_shape", &GatherDescriptor::src_shape)
      .field("index_shape", &GatherDescriptor::index_shape)
      .field("dim", &GatherDescriptor::dim)
      .field("accumulate", &GatherDescriptor::accumulate);
  DescriptorClass<ScatterAddDescriptor>(m, "ScatterAddDescriptor")
      .field("dtype", &ScatterAddDescriptor::dtype)
      .field("index_dtype", &ScatterAddDescriptor::index_dtype)
      .field("dst_shape", &ScatterAddDescriptor::dst_shape)
      .field("index_shape", &ScatterAddDescriptor::index_shape)
      .field("dim", &ScatterAddDescriptor::dim)
      .field("accumulate", &ScatterAddDescriptor::accumulate);
  DescriptorClass<IndexSelectDescriptor>(m, "IndexSelectDescriptor")
      .field("dtype", &IndexSelectDescriptor::dtype)
      .field("index_dtype", &IndexSelectDescriptor::index_dtype)
      .field("src_shape", &IndexSelectDescriptor::src_shape)
      .field("dim", &IndexSelectDescriptor::dim)
      .field("num_indices", &IndexSelectDescriptor::num_indices)
      .field("accumulate", &IndexSelectDescriptor::accumulate);
  DescriptorClass<EmbeddingDescriptor>(m, "EmbeddingDescriptor")
      .field("dtype", &EmbeddingDescriptor::dtype)
      .field("index_dtype", &EmbeddingDescriptor::index_dtype)
      .field("num_embeddings", &EmbeddingDescriptor::num_embeddings)
      .field("embedding_dim", &EmbeddingDescriptor::embedding_dim)
      .field("num_indices", &EmbeddingDescriptor::num_indices)
      .field("padding_idx", &EmbeddingDescriptor::padding_idx)
      .field("accumulate", &EmbeddingDescriptor::accumulate);

  DescriptorClass<MatmulDescriptor>(m, "MatmulDescriptor")
      .field("dtype", &MatmulDescriptor::dtype)
      .field("out_dtype", &MatmulDescriptor::out_dtype)
      .field("a", &MatmulDescriptor::a)
      .field("b", &MatmulDescriptor::b)
      .field("transpose_a", &MatmulDescriptor::transpose_a)
      .field("transpose_b", &MatmulDescriptor::transpose_b)
      .field("alpha", &MatmulDescriptor::alpha)
      .field("beta", &MatmulDescriptor::beta)
      .field("has_c", &MatmulDescriptor::has_c)
      .field("allow_tf32", &MatmulDescriptor::allow_tf32);
  DescriptorClass<LinearDescriptor>(m, "LinearDescriptor")
      .field("dtype", &LinearDescriptor::dtype)
      .field("x", &LinearDescriptor::x)
      .field("out_features", &LinearDescriptor::out_features)
      .field("has_bias", &LinearDescriptor::has_bias)
      .field("activation", &LinearDescriptor::activation)
      .field("allow_tf32", &LinearDescriptor::allow_tf32);
  DescriptorClass<GroupedMatmulDescriptor>(m, "GroupedMatmulDescriptor")
      .field("dtype", &GroupedMatmulDescriptor::dtype)
      .field("index_dtype", &GroupedMatmulDescriptor::index_dtype)
      .field("out_dtype", &GroupedMatmulDescriptor::out_dtype)
      .field("rows", &GroupedMatmulDescriptor::rows)
      .field("k", &GroupedMatmulDescriptor::k)
      .field("n", &GroupedMatmulDescriptor::n)
      .field("groups", &GroupedMatmulDescriptor::groups)
      .field("transpose_b", &GroupedMatmulDescriptor::transpose_b)
      .field("allow_tf32", &GroupedMatmulDescriptor::allow_tf32);

  DescriptorClass<NormDescriptor>(m, "NormDescriptor")
      .field("dtype", &NormDescriptor::dtype)
      .field("weight_dtype", &NormDescriptor::weight_dtype)
      .field("shape", &NormDescriptor::shape)
      .field("normalized_dims", &NormDescriptor::normalized_dims)
      .field("eps", &NormDescriptor::eps)
      .field("has_weight", &NormDescriptor::has_weight)
      .field("has_bias", &NormDescriptor::has_bias)
      .field("weight_offset", &NormDescriptor::weight_offset)
      .field("residual", &NormDescriptor::residual);

  DescriptorClass<GroupNormDescriptor>(m, "GroupNormDescriptor")
      .field("dtype", &GroupNormDescriptor::dtype)
      .field("weight_dtype", &GroupNormDescriptor::weight_dtype)
      .field("shape", &GroupNormDescriptor::shape)
      .field("groups", &GroupNormDescriptor::groups)
      .field("eps", &GroupNormDescriptor::eps)
      .field("has_weight", &GroupNormDescriptor::has_weight)
      .field("has_bias", &GroupNormDescriptor::has_bias)
      .field("silu", &GroupNormDescriptor::silu);

  DescriptorClass<BatchNormDescriptor>(m, "BatchNormDescriptor")
      .field("dtype", &BatchNormDescriptor::dtype)
      .field("weight_dtype", &BatchNormDescriptor::weight_dtype)
      .field("shape", &BatchNormDescriptor::shape)
      .field("channel_dim", &BatchNormDescriptor::channel_dim)
      .field("eps", &BatchNormDescriptor::eps)
      .field("momentum", &BatchNormDescriptor::momentum)
      .field("training", &BatchNormDescriptor::training)
      .field("running_stats", &BatchNormDescriptor::running_stats)
      .field("has_weight", &BatchNormDescriptor::has_weight)
      .field("has_bias", &BatchNormDescriptor::has_bias);

  DescriptorClass<KvCacheAppendDescriptor>(m, "KvCacheAppendDescriptor")
      .field("dtype", &KvCacheAppendDescriptor::dtype)
      .field("batch", &KvCacheAppendDescriptor::batch)
      .field("new_tokens", &KvCacheAppendDescriptor::new_tokens)
      .field("heads_kv", &KvCacheAppendDescriptor::heads_kv)
      .field("head_dim", &KvCacheAppendDescriptor::head_dim)
      .field("head_dim_v", &KvCacheAppendDescriptor::head_dim_v)
      .field("block_size", &KvCacheAppendDescriptor::block_size)
      .field("num_blocks", &KvCacheAppendDescriptor::num_blocks)
      .field("max_blocks", &KvCacheAppendDescriptor::max_blocks);
  DescriptorClass<AttentionDescriptor>(m, "AttentionDescriptor")
      .field("dtype", &AttentionDescriptor::dtype)
      .field("batch", &AttentionDescriptor::batch)
      .field("seq_q", &AttentionDescriptor::seq_q)
      .field("seq_kv", &AttentionDescriptor::seq_kv)
      .field("heads_q", &AttentionDescriptor::heads_q)
      .field("heads_kv", &AttentionDescriptor::heads_kv)
      .field("head_dim", &AttentionDescriptor::head_dim)
      .field("head_dim_v", &AttentionDescriptor::head_dim_v)
      .field("scale", &AttentionDescriptor::scale)
      .field("causal", &AttentionDescriptor::causal)
      .field("alignment", &AttentionDescriptor::alignment)
      .field("window_left", &AttentionDescriptor::window_left)
      .field("window_right", &AttentionDescriptor::window_right)
      .field("softcap", &AttentionDescriptor::softcap)
      .field("has_bias", &AttentionDescriptor::has_bias)
      .field("bias_dtype", &AttentionDescriptor::bias_dtype)
      .field("varlen", &AttentionDescriptor::varlen)
      .field("total_q", &AttentionDescriptor::total_q)
      .field("total_kv", &AttentionDescriptor::total_kv)
      .field("paged", &AttentionDescriptor::paged)
      .field("block_size", &AttentionDescriptor::block_size)
      .field("num_blocks", &AttentionDescriptor::num_blocks)
      .field("max_blocks", &AttentionDescriptor::max_blocks);

  DescriptorClass<CrossEntropyDescriptor>(m, "CrossEntropyDescriptor")
      .field("dtype", &CrossEntropyDescriptor::dtype)
      .field("index_dtype", &CrossEntropyDescriptor::index_dtype)
      .field("weight_dtype", &CrossEntropyDescriptor::weight_dtype)
      .field("shape", &CrossEntropyDescriptor::shape)
      .field("reduction", &CrossEntropyDescriptor::reduction)
      .field("ignore_index", &CrossEntropyDescriptor::ignore_index)
      .field("label_smoothing", &CrossEntropyDescriptor::label_smoothing)
      .field("z_loss", &CrossEntropyDescriptor::z_loss)
      .field("has_weight", &CrossEntropyDescriptor::has_weight)
      .field("log_probs", &CrossEntropyDescriptor::log_probs)
      .field("soft_targets", &CrossEntropyDescriptor::soft_targets);
  DescriptorClass<LinearCrossEntropyDescriptor>(m, "LinearCrossEntropyDescriptor")
      .field("dtype", &LinearCrossEntropyDescriptor::dtype)
      .field("index_dtype", &LinearCrossEntropyDescriptor::index_dtype)
      .field("tokens", &LinearCrossEntropyDescriptor::tokens)
      .field("hidden_size", &LinearCrossEntropyDescriptor::hidden_size)
      .field("vocab_size", &LinearCrossEntropyDescriptor::vocab_size)
      .field("has_bias", &LinearCrossEntropyDescriptor::has_bias)
      .field("has_class_weight", &LinearCrossEntropyDescriptor::has_class_weight)
      .field("reduction", &LinearCrossEntropyDescriptor::reduction)
      .field("ignore_index", &LinearCrossEntropyDescriptor::ignore_index)
      .field("label_smoothing", &LinearCrossEntropyDescriptor::label_smoothing)
      .field("z_loss", &LinearCrossEntropyDescriptor::z_loss)
      .field("grad_in_forward", &LinearCrossEntropyDescriptor::grad_in_forward)
      .field("weight_grad_dtype", &LinearCrossEntropyDescriptor::weight_grad_dtype)
      .field("chunk_rows", &LinearCrossEntropyDescriptor::chunk_rows)
      .field("allow_tf32", &LinearCrossEntropyDescriptor::allow_tf32);
  DescriptorClass<PointwiseLossDescriptor>(m, "PointwiseLossDescriptor")
      .field("dtype", &PointwiseLossDescriptor::dtype)
      .field("kind", &PointwiseLossDescriptor::kind)
      .field("shape", &PointwiseLossDescriptor::shape)
      .field("reduction", &PointwiseLossDescriptor::reduction)
      .field("beta", &PointwiseLossDescriptor::beta)
      .field("log_target", &PointwiseLossDescriptor::log_target)
      .field("has_weight", &PointwiseLossDescriptor::has_weight)
      .field("has_pos_weight", &PointwiseLossDescriptor::has_pos_weight);

  DescriptorClass<RandomDescriptor>(m, "RandomDescriptor")
      .field("kind", &RandomDescriptor::kind)
      .field("dtype", &RandomDescriptor::dtype)
      .field("shape", &RandomDescriptor::shape)
      .field("seed", &RandomDescriptor::seed)
      .field("offset", &RandomDescriptor::offset)
      .field("low", &RandomDescriptor::low)
      .field("high", &RandomDescriptor::high)
      .field("p", &RandomDescriptor::p)
      .field("mean", &RandomDescriptor::mean)
      .field("std", &RandomDescriptor::std)
      .field("lambda_", &RandomDescriptor::lambda);  // (lambda is a Python keyword)
  DescriptorClass<RandpermDescriptor>(m, "RandpermDescriptor")
      .field("dtype", &RandpermDescriptor::dtype)
      .field("n", &RandpermDescriptor::n)
      .field("seed", &RandpermDescriptor::seed)
      .field("offset", &RandpermDescriptor::offset);
  DescriptorClass<MultinomialDescriptor>(m, "MultinomialDescriptor")
      .field("dtype", &MultinomialDescriptor::dtype)
      .field("index_dtype", &MultinomialDescriptor::index_dtype)
      .field("shape", &MultinomialDescriptor::shape)
      .field("samples", &MultinomialDescriptor::samples)
      .field("replacement", &MultinomialDescriptor::replacement)
      .field("seed", &MultinomialDescriptor::seed)
      .field("offset", &MultinomialDescriptor::offset);
  DescriptorClass<DropoutDescriptor>(m, "DropoutDescriptor")
      .field("dtype", &DropoutDescriptor::dtype)
      .field("shape", &DropoutDescriptor::shape)
      .field("p", &DropoutDescriptor::p)
      .field("seed", &DropoutDescriptor::seed)
      .field("offset", &DropoutDescriptor::offset);

  DescriptorClass<RotaryDescriptor>(m, "RotaryDescriptor")
      .field("dtype", &RotaryDescriptor::dtype)
      .field("index_dtype", &RotaryDescriptor::index_dtype)
      .field("batch", &RotaryDescriptor::batch)
      .field("seq_len", &RotaryDescriptor::seq_len)
      .field("q_heads", &RotaryDescriptor::q_heads)
      .field("k_heads", &RotaryDescriptor::k_heads)
      .field("head_dim", &RotaryDescriptor::head_dim)
      .field("rotary_dim", &RotaryDescriptor::rotary_dim)
      .field("layout", &RotaryDescriptor::layout)
      .field("base", &RotaryDescriptor::base)
      .field("has_inv_freq", &RotaryDescriptor::has_inv_freq);

  DescriptorClass<ReduceDescriptor>(m, "ReduceDescriptor")
      .field("dtype", &ReduceDescriptor::dtype)
      .field("shape", &ReduceDescriptor::shape)
      .field("dims", &ReduceDescriptor::dims)
      .field("keepdim", &ReduceDescriptor::keepdim)
      .field("kind", &ReduceDescriptor::kind)
      .field("out_dtype", &ReduceDescriptor::out_dtype)
      .field("index_dtype", &ReduceDescriptor::index_dtype)
      .field("correction", &ReduceDescriptor::correction)
      .field("p", &ReduceDescriptor::p);
  DescriptorClass<ScanDescriptor>(m, "ScanDescriptor")
      .field("dtype", &ScanDescriptor::dtype)
      .field("shape", &ScanDescriptor::shape)
      .field("dim", &ScanDescriptor::dim)
      .field("kind", &ScanDescriptor::kind)
      .field("reverse", &ScanDescriptor::reverse)
      .field("out_dtype", &ScanDescriptor::out_dtype)
      .field("index_dtype", &ScanDescriptor::index_dtype);
  DescriptorClass<SegmentDescriptor>(m, "SegmentDescriptor")
      .field("dtype", &SegmentDescriptor::dtype)
      .field("index_dtype", &SegmentDescriptor::index_dtype)
      .field("data_shape", &SegmentDescriptor::data_shape)
      .field("num_segments", &SegmentDescriptor::num_segments)
      .field("form", &SegmentDescriptor::form)
      .field("initial", &SegmentDescriptor::initial);

  DescriptorClass<SoftmaxDescriptor>(m, "SoftmaxDescriptor")
      .field("dtype", &SoftmaxDescriptor::dtype)
      .field("out_dtype", &SoftmaxDescriptor::out_dtype)
      .field("shape", &SoftmaxDescriptor::shape)
      .field("dim", &SoftmaxDescriptor::dim)
      .field("kind", &SoftmaxDescriptor::kind);
}

}  // namespace baracuda::python
