#pragma once
// Naive double-precision references for the BinaryParam family, independent of both backends.
namespace baracuda::reference {

inline double lerp(double a, double b, double w) { return a + w * (b - a); }
inline double lerp_da(double dout, double w) { return (1.0 - w) * dout; }
inline double lerp_db(double dout, double w) { return w * dout; }
inline double lerp_dw(double dout, double a, double b) { return (b - a) * dout; }

}  // namespace baracuda::reference
