"""A stand-in for PyTorch in the --torch tests (t206, t208): torch's module layout and profiler
rules, no tensors. PYTHONPATH puts it first; FAKE_TORCH_NVTX_LIB names the NVTX library its
operators call; torch.op(NAME[, SECONDS]) runs an operator (an NVTX range under the NVTX
profiler, an event under any other)."""
__version__ = "0.0+standin"
from torch import _C
import torch._C._autograd
import torch.cuda
import torch.autograd
import torch.autograd.profiler
from torch._C._autograd import _op as op
