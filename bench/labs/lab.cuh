#pragma once
// What the labs share: a CUDA call checked (the lab stops on an error) and a median of event-timed
// launches (5 warm-up runs, then 20): each alone (median_ms) or queued back to back, each between its
// own events (queued_median_ms, the profiler's default method; launch(i) may rotate inputs by i).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                             \
  do {                                                                    \
    cudaError_t e = (x);                                                  \
    if (e != cudaSuccess) {                                               \
      printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

template <class F>
float median_ms(F&& launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> times;
  for (int it = 0; it < 25; ++it) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (it >= 5) times.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <class F>
float queued_median_ms(F&& launch, int runs = 40) {
  std::vector<cudaEvent_t> events(2 * runs);
  for (cudaEvent_t& ev : events) CK(cudaEventCreate(&ev));
  for (int i = 0; i < 5; ++i) launch(i);
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < runs; ++i) {
    CK(cudaEventRecord(events[2 * i]));
    launch(i);
    CK(cudaEventRecord(events[2 * i + 1]));
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> times(runs);
  for (int i = 0; i < runs; ++i) CK(cudaEventElapsedTime(&times[i], events[2 * i], events[2 * i + 1]));
  for (cudaEvent_t ev : events) CK(cudaEventDestroy(ev));
  CK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
