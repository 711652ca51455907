#pragma once
// Everything a user of baracuda needs: the vocabulary and every op family.
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/binary_param.hpp"
#include "baracuda/ops/indexing.hpp"
#include "baracuda/ops/reduce.hpp"
#include "baracuda/ops/scan.hpp"
#include "baracuda/ops/segment.hpp"
#include "baracuda/ops/softmax.hpp"
#include "baracuda/ops/unary.hpp"
