"""The names the importers know each op kind by: torch's names, FLOPs per element, kernel names.

The importers' facts of the op table (:data:`workbench.values.ops.OPS`: ``torch``,
``flops_per_element``, ``kernel_names``), listed by kind, beside
:mod:`workbench.values.op_bindings` (which lists the functions that compute each kind); the
table attaches them to its entries and derives :data:`~workbench.values.ops.TORCH_ALIASES`,
:data:`~workbench.values.ops.FLOPS_PER_ELEMENT` and :data:`~workbench.values.ops.KERNEL_KINDS`
from them, so this module imports nothing of the table.  Each table is built by a function,
once, when the op table is built; names are space-separated.

>>> torch_names()["conv2d"]
'Conv2d conv2d convolution'
"""

from __future__ import annotations


def torch_names() -> dict[str, str]:
    """Kind -> every torch ``nn.Module`` type name (capitalised) and function / method / aten
    name the torch.fx import maps to it (the importer keeps each name's cost formula)."""
    return {  # module type names (capitalised), then function / method / aten names
        "conv1d": "Conv1d conv1d", "conv2d": "Conv2d conv2d convolution",
        "conv3d": "Conv3d conv3d", "conv_transpose": "ConvTranspose2d",
        "matmul": "Linear linear matmul mm bmm addmm",
        "batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d batch_norm",
        "layernorm": "LayerNorm layer_norm", "groupnorm": "GroupNorm group_norm",
        "instancenorm": "InstanceNorm2d", "relu": "ReLU relu relu_", "relu6": "ReLU6 relu6",
        "gelu": "GELU gelu", "sigmoid": "Sigmoid sigmoid", "tanh": "Tanh tanh",
        "silu": "SiLU silu silu_", "leaky_relu": "LeakyReLU leaky_relu",
        "hard_swish": "Hardswish hardswish hardswish_",
        "hard_sigmoid": "Hardsigmoid hardsigmoid hardsigmoid_", "elu": "ELU elu",
        "softplus": "Softplus softplus", "prelu": "PReLU prelu",
        "softmax": "Softmax softmax", "log_softmax": "LogSoftmax log_softmax",
        "maxpool": "MaxPool2d max_pool2d", "avgpool": "AvgPool2d avg_pool2d",
        "global_avgpool": "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
                          "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d",
        "global_maxpool": "AdaptiveMaxPool2d adaptive_max_pool2d",
        "dropout": "Dropout dropout", "flatten": "Flatten flatten",
        "identity": "Identity identity alias detach _add_batch_dim "
                    "_remove_batch_dim", "embedding": "Embedding embedding",
        "reduce_mean": "mean", "reduce_sum": "sum", "reduce_max": "amax",
        "concat": "cat concat concatenate", "stack": "stack", "contiguous": "contiguous",
        "clone": "clone lift_fresh_copy", "cast": "to float half type_as _to_copy",
        "pad": "pad constant_pad_nd",
        "gather": "index_select", "reshape": "view reshape unflatten reshape_as view_as "
                                                       "_unsafe_view",
        "squeeze": "squeeze", "unsqueeze": "unsqueeze",
        "transpose": "permute transpose t swapaxes swapdims", "expand": "expand",
        "getitem": "getitem select", "slice": "slice",
        "split": "split chunk split_with_sizes unbind", "tile": "repeat", "range": "arange",
        "trilu": "tril triu",
        "constant": "zeros_like ones_like full_like empty_like new_zeros new_ones new_full "
                    "new_empty zeros ones full empty fill",
        "resize": "Upsample interpolate upsample_nearest2d upsample_bilinear2d",
        "equal": "eq", "greater": "gt", "less": "lt", "greater_or_equal": "ge",
        "less_or_equal": "le", "not": "logical_not bitwise_not __invert__",
        "and": "logical_and bitwise_and __and__", "or": "logical_or bitwise_or __or__",
        "xor": "logical_xor bitwise_xor __xor__", "not_equal": "ne", "isnan": "isnan",
        "mod": "remainder fmod", "abs": "abs",
        "log": "log", "reciprocal": "reciprocal", "sin": "sin", "cos": "cos",
        "floor": "floor", "ceil": "ceil", "round": "round", "sign": "sign", "exp": "exp",
        "sqrt": "sqrt",
        "rsqrt": "rsqrt", "pow": "pow", "erf": "erf", "clip": "clamp hardtanh Hardtanh",
        "neg": "neg", "lstm": "LSTM lstm", "gru": "GRU gru", "rnn": "RNN rnn_tanh rnn_relu",
        "weight_norm": "_weight_norm",
        "add": "add iadd add_", "sub": "sub isub rsub", "mul": "mul imul mul_",
        "div": "truediv div itruediv floordiv", "max": "maximum max", "min": "minimum min",
        "where": "where", "masked_fill": "masked_fill", "cumsum": "cumsum", "diff": "diff",
        "index": "index", "gather_elements": "gather", "roll": "roll", "einsum": "einsum",
        "attention": "MultiheadAttention scaled_dot_product_attention "
                                       "_native_multi_head_attention",
        "transformer_layer": "TransformerEncoderLayer _transformer_encoder_layer_fwd"}


def flops_per_element() -> dict[int, str]:
    """FLOPs per output element -> the elementwise and normalisation kinds that cost that many
    (and the recurrent kinds' gate FLOPs per hidden unit and step)."""
    return {  # 1 for arithmetic and simple maps, 2 for two-step maps (clip, leaky relu) and
        # folded batch norm (x*a + b), 3 for exp-based maps and weight norm (square and sum,
        # scale), 5/6 for (log-)softmax, 8 for norms; the recurrent cells' gates per hidden unit
        # and step (shape_costs.recurrent_cost): the projections and both biases added per gate,
        # the gate maps (sigmoid 4, tanh 5), the state update (LSTM 38, GRU 27, RNN 8)
        1: "relu exp sqrt rsqrt pow erf neg add sub mul div max min where mod log reciprocal "
           "abs floor ceil round sign sin cos not and or xor equal greater less "
           "greater_or_equal less_or_equal isnan thresholded_relu masked_fill not_equal diff "
           "cumsum",
        2: "relu6 leaky_relu clip prelu batchnorm", 3: "hard_sigmoid elu selu celu softplus "
        "softsign weight_norm", 4: "sigmoid hard_swish", 5: "tanh silu softmax",
        6: "log_softmax", 8: "gelu layernorm groupnorm instancenorm rnn", 27: "gru", 38: "lstm"}


def kernel_fragments() -> dict[str, str]:
    """Kind -> lower-case fragments of the CUDA kernel names that mark a profiled kernel as that
    kind (tried in :data:`workbench.values.ops.KERNEL_MATCH_ORDER`)."""
    return {  # lower-case fragments of real kernel names (H200, A100 and MI250 profiles)
        "memcpy": "memcpy", "memset": "memset",
        # cuDNN's layout transforms around NHWC convolutions
        "transpose": "nchwtonhwc nhwctonchw permute transpose",
        # cuDNN / CUTLASS convolutions: forward (fprop), grad-input (dgrad), grad-weight
        # (wgrad), implicit GEMMs, FFT, the scudnn engines and cask's offset kernels
        "conv2d": "conv winograd fprop dgrad wgrad implicit_gemm fft2d scudnn cask_cudnn "
                  "cutlass_cudnn",
        # cuBLAS(Lt) / CUTLASS / rocBLAS (Tensile ``Cijk_``) GEMMs, cuBLASLt's epilogue kernel,
        # Triton's GEMM templates
        "matmul": "gemm gemv matmul cublas cutlass cijk_ epilogue::impl triton_tem",
        # FBGEMM's FP8 / HFP8 conversions (before ``gemm``, which ``fbgemm`` contains)
        "cast": "quantize fp8",
        "batchnorm": "batch_norm batchnorm bn_fw bn_bw",
        "layernorm": "layer_norm layernorm rowwisemoments gammabetabackward",
        "softmax": "softmax", "maxpool": "max_pool maxpool",
        "avgpool": "avg_pool avgpool adaptive_average_pool", "concat": "concat cat_ catarray",
        "embedding": "split_embedding bounds_check_indices linearize_index bucketize_sparse "
                     "offsets_range embedding", "gather": "indexselect index_select gather",
        "collective": "nccl rccl", "sort": "radixsort sort",
        "relu": "relu", "gelu": "gelu", "sigmoid": "sigmoid", "tanh": "tanh",
        # reductions, cub's scans, Triton's reduction and persistent-reduction kernels
        "reduce": "reduce scan triton_red triton_per",
        # PyTorch's elementwise / foreach (optimizer) / dropout kernels, Triton pointwise
        "elementwise": "elementwise dropout multi_tensor_apply scalepackedtensor triton_poi "
                       "fill_kernel copy_kernel",
        # any other Triton kernel: an Inductor fusion group
        "fused": "triton"}


__all__ = ["flops_per_element", "kernel_fragments", "torch_names"]
