// A TensorFlow op computing a convolution's weight gradient with a separately loaded, current
// oneDNN (issue 32's go/no-go; built and run by run.sh). NHWC input and output gradient, HWIO
// result, float32 or bfloat16. The primitive picks its layouts ("any"); the reorders from and to
// TensorFlow's plain layouts run inside the op and are timed with it. Plans (primitive, reorders,
// blocked buffers) are cached per shape and type; ONEDNN_OP_LAYOUT=plain makes the primitive take
// NHWC/HWIO itself (no reorders, oneDNN's gemm-based kernels).
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

using namespace tensorflow;

REGISTER_OP("OnednnConv2DBackpropFilter")
    .Input("input: T")
    .Input("out_backprop: T")
    .Output("filter_backprop: T")
    .Attr("T: {float, bfloat16}")
    .Attr("filter_shape: list(int)")
    .Attr("strides: list(int)")
    .Attr("pads: list(int)")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      std::vector<int64_t> fs;
      TF_RETURN_IF_ERROR(c->GetAttr("filter_shape", &fs));
      c->set_output(0, c->MakeShape({fs[0], fs[1], fs[2], fs[3]}));
      return absl::OkStatus();
    });

namespace {

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& Stream() {  // one in-order queue, created once: a SYCL queue per call costs milliseconds
  static dnnl::stream stream(Engine());
  return stream;
}

struct Plan {
  dnnl::convolution_backward_weights primitive;
  dnnl::memory::desc src_user, dst_user, wei_user;
  dnnl::memory src_blocked, dst_blocked, wei_blocked;  // empty where the primitive takes the plain layout
  dnnl::reorder to_src, to_dst, from_wei;
};

using Key = std::tuple<std::vector<int64_t>, int>;

std::shared_ptr<Plan> MakePlan(const std::vector<int64_t>& x, const std::vector<int64_t>& dy,
                               const std::vector<int64_t>& fs, const std::vector<int64_t>& st,
                               const std::vector<int64_t>& pads, dnnl::memory::data_type type, bool any) {
  using tag = dnnl::memory::format_tag;
  auto& eng = Engine();
  auto plan = std::make_shared<Plan>();
  dnnl::memory::dims src_d = {x[0], x[3], x[1], x[2]}, dst_d = {dy[0], dy[3], dy[1], dy[2]};
  dnnl::memory::dims wei_d = {fs[3], fs[2], fs[0], fs[1]};
  plan->src_user = dnnl::memory::desc(src_d, type, tag::nhwc);
  plan->dst_user = dnnl::memory::desc(dst_d, type, tag::nhwc);
  plan->wei_user = dnnl::memory::desc(wei_d, type, tag::hwio);
  auto pick = [&](const dnnl::memory::desc& user, const dnnl::memory::dims& d) {
    return any ? dnnl::memory::desc(d, type, tag::any) : user;
  };
  dnnl::memory::dims strides = {st[0], st[1]}, pl = {pads[0], pads[2]}, pr = {pads[1], pads[3]};
  auto fwd = dnnl::convolution_forward::primitive_desc(
      eng, dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, pick(plan->src_user, src_d),
      pick(plan->wei_user, wei_d), pick(plan->dst_user, dst_d), strides, pl, pr);
  auto bwd = dnnl::convolution_backward_weights::primitive_desc(
      eng, dnnl::algorithm::convolution_direct, pick(plan->src_user, src_d), pick(plan->wei_user, wei_d),
      pick(plan->dst_user, dst_d), strides, pl, pr, fwd);
  plan->primitive = dnnl::convolution_backward_weights(bwd);
  if (bwd.src_desc() != plan->src_user) {
    plan->src_blocked = dnnl::memory(bwd.src_desc(), eng);
    plan->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->src_user, eng, bwd.src_desc()));
  }
  if (bwd.diff_dst_desc() != plan->dst_user) {
    plan->dst_blocked = dnnl::memory(bwd.diff_dst_desc(), eng);
    plan->to_dst = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->dst_user, eng, bwd.diff_dst_desc()));
  }
  if (bwd.diff_weights_desc() != plan->wei_user) {
    plan->wei_blocked = dnnl::memory(bwd.diff_weights_desc(), eng);
    plan->from_wei = dnnl::reorder(dnnl::reorder::primitive_desc(eng, bwd.diff_weights_desc(), eng, plan->wei_user));
  }
  return plan;
}

class OnednnConv2DBackpropFilterOp : public OpKernel {
 public:
  explicit OnednnConv2DBackpropFilterOp(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("filter_shape", &filter_shape_));
    OP_REQUIRES_OK(c, c->GetAttr("strides", &strides_));
    OP_REQUIRES_OK(c, c->GetAttr("pads", &pads_));
    const char* layout = getenv("ONEDNN_OP_LAYOUT");  // "plain" forces nhwc/hwio in the primitive itself
    any_ = !(layout && std::string(layout) == "plain");
  }

  void Compute(OpKernelContext* c) override {
    const Tensor& x = c->input(0);
    const Tensor& dy = c->input(1);
    OP_REQUIRES(c, x.dims() == 4 && dy.dims() == 4, errors::InvalidArgument("input and out_backprop must be 4-D"));
    Tensor* dw = nullptr;
    OP_REQUIRES_OK(c, c->allocate_output(0, TensorShape({filter_shape_[0], filter_shape_[1], filter_shape_[2],
                                                        filter_shape_[3]}), &dw));
    auto type = x.dtype() == DT_FLOAT ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
    std::vector<int64_t> xs(x.shape().dim_sizes().begin(), x.shape().dim_sizes().end());
    std::vector<int64_t> ys(dy.shape().dim_sizes().begin(), dy.shape().dim_sizes().end());
    std::vector<int64_t> key = xs;
    key.insert(key.end(), ys.begin(), ys.end());
    key.push_back(static_cast<int64_t>(type));
    std::shared_ptr<Plan> plan;
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        try {
          it = cache_.emplace(key, MakePlan(xs, ys, filter_shape_, strides_, pads_, type, any_)).first;
        } catch (const dnnl::error& e) {
          c->SetStatus(errors::Internal("oneDNN: ", e.what()));
          return;
        }
      }
      plan = it->second;
    }
    auto& eng = Engine();
    static std::mutex stream_mu;  // the one stream is shared by all plans
    std::lock_guard<std::mutex> lock(stream_mu);
    try {
      dnnl::stream& stream = Stream();
      dnnl::memory src(plan->src_user, eng, const_cast<char*>(x.tensor_data().data()));
      dnnl::memory dst(plan->dst_user, eng, const_cast<char*>(dy.tensor_data().data()));
      dnnl::memory wei(plan->wei_user, eng, const_cast<char*>(dw->tensor_data().data()));
      dnnl::memory s = src, d = dst, w = wei;
      if (plan->src_blocked) { plan->to_src.execute(stream, src, plan->src_blocked); s = plan->src_blocked; }
      if (plan->dst_blocked) { plan->to_dst.execute(stream, dst, plan->dst_blocked); d = plan->dst_blocked; }
      if (plan->wei_blocked) w = plan->wei_blocked;
      plan->primitive.execute(stream, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DIFF_DST, d}, {DNNL_ARG_DIFF_WEIGHTS, w}});
      if (plan->wei_blocked) plan->from_wei.execute(stream, plan->wei_blocked, wei);
      stream.wait();
    } catch (const dnnl::error& e) {
      c->SetStatus(errors::Internal("oneDNN: ", e.what()));
    }
  }

 private:
  std::vector<int64_t> filter_shape_, strides_, pads_;
  bool any_ = true;
  std::mutex cache_mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<Plan>> cache_;
};

}  // namespace

REGISTER_KERNEL_BUILDER(Name("OnednnConv2DBackpropFilter").Device(DEVICE_CPU).TypeConstraint<float>("T"),
                        OnednnConv2DBackpropFilterOp);
REGISTER_KERNEL_BUILDER(Name("OnednnConv2DBackpropFilter").Device(DEVICE_CPU).TypeConstraint<bfloat16>("T"),
                        OnednnConv2DBackpropFilterOp);
