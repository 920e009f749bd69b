// A current oneDNN alone, no TensorFlow (built and run by run.sh): the three passes of SNGAN D's
// convolutions at batch 128 (a fused step's D batch), each primitive alone in the layouts it
// prefers ("any": a lower bound for a pipeline that kept blocked layouts between layers, no
// reorder paid) and in plain NHWC/HWIO (what an op fed TensorFlow's tensors pays without
// reorders), medians over reps.
#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;
struct Shape { const char *label; int n, h, w, c, k, o, s; };
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F> double med(F f, int reps) {
  f(); f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) { double a = now(); f(); t.push_back(now() - a); }
  std::sort(t.begin(), t.end());
  return 1e3 * t[reps / 2];
}
memory filled(const memory::desc &d, engine &eng) {
  memory m(d, eng);
  size_t bytes = d.get_size();
  unsigned char *p = (unsigned char *)m.map_data();
  for (size_t i = 0; i < bytes; ++i) p[i] = (i * 2654435761u >> 13) & 0x3f;
  m.unmap_data(p);
  return m;
}
int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 9;
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  std::vector<Shape> shapes = {
      {"D 32x32x3 -> 64, k3 s1", 128, 32, 32, 3, 3, 64, 1},     {"D 32x32x64 -> 64, k4 s2", 128, 32, 32, 64, 4, 64, 2},
      {"D 16x16x64 -> 128, k3 s1", 128, 16, 16, 64, 3, 128, 1}, {"D 16x16x128 -> 128, k4 s2", 128, 16, 16, 128, 4, 128, 2},
      {"D 8x8x128 -> 256, k3 s1", 128, 8, 8, 128, 3, 256, 1},   {"D 8x8x256 -> 256, k4 s2", 128, 8, 8, 256, 4, 256, 2},
      {"D 4x4x256 -> 512, k3 s1", 128, 4, 4, 256, 3, 512, 1}};
  printf("%-28s %-5s %-6s %9s %9s %9s\n", "convolution", "dtype", "layout", "fwd", "dX", "dW");
  double tot[2][2][3] = {};
  for (auto &sh : shapes) {
    int oh = (sh.h + sh.s - 1) / sh.s, ow = oh;
    int tot_p = std::max((oh - 1) * sh.s + sh.k - sh.h, 0);
    memory::dims src_d = {sh.n, sh.c, sh.h, sh.w}, wei_d = {sh.o, sh.c, sh.k, sh.k}, dst_d = {sh.n, sh.o, oh, ow};
    memory::dims st = {sh.s, sh.s}, pl = {tot_p / 2, tot_p / 2}, pr = {tot_p - tot_p / 2, tot_p - tot_p / 2};
    int ti = 0;
    for (dt type : {dt::f32, dt::bf16}) {
      for (int any = 0; any < 2; ++any) {
        auto md = [&](const memory::dims &d, tag t) { return memory::desc(d, type, any ? tag::any : t); };
        auto fwd = convolution_forward::primitive_desc(eng, prop_kind::forward_training, algorithm::convolution_direct,
                                                       md(src_d, tag::nhwc), md(wei_d, tag::hwio), md(dst_d, tag::nhwc), st, pl, pr);
        auto bd = convolution_backward_data::primitive_desc(eng, algorithm::convolution_direct, md(src_d, tag::nhwc),
                                                            md(wei_d, tag::hwio), md(dst_d, tag::nhwc), st, pl, pr, fwd);
        auto bw = convolution_backward_weights::primitive_desc(eng, algorithm::convolution_direct, md(src_d, tag::nhwc),
                                                               md(wei_d, tag::hwio), md(dst_d, tag::nhwc), st, pl, pr, fwd);
        memory x = filled(fwd.src_desc(), eng), w = filled(fwd.weights_desc(), eng), y(fwd.dst_desc(), eng);
        memory dy = filled(bd.diff_dst_desc(), eng), dx(bd.diff_src_desc(), eng), w2 = filled(bd.weights_desc(), eng);
        memory x3 = filled(bw.src_desc(), eng), dy3 = filled(bw.diff_dst_desc(), eng), dw(bw.diff_weights_desc(), eng);
        convolution_forward pf(fwd);
        convolution_backward_data pd(bd);
        convolution_backward_weights pw(bw);
        double r[3];
        r[0] = med([&] { pf.execute(strm, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}}); strm.wait(); }, reps);
        r[1] = med([&] { pd.execute(strm, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w2}, {DNNL_ARG_DIFF_SRC, dx}}); strm.wait(); }, reps);
        r[2] = med([&] { pw.execute(strm, {{DNNL_ARG_SRC, x3}, {DNNL_ARG_DIFF_DST, dy3}, {DNNL_ARG_DIFF_WEIGHTS, dw}}); strm.wait(); }, reps);
        for (int p = 0; p < 3; ++p) tot[ti][any][p] += r[p];
        printf("%-28s %-5s %-6s %9.2f %9.2f %9.2f   %s | %s | %s\n", sh.label, type == dt::f32 ? "f32" : "bf16", any ? "any" : "plain",
               r[0], r[1], r[2], fwd.impl_info_str(), bd.impl_info_str(), bw.impl_info_str());
      }
      ++ti;
    }
  }
  for (int t = 0; t < 2; ++t)
    for (int a = 0; a < 2; ++a)
      printf("all %-5s %-6s fwd %.1f dX %.1f dW %.1f\n", t ? "bf16" : "f32", a ? "any" : "plain", tot[t][a][0], tot[t][a][1], tot[t][a][2]);
}
