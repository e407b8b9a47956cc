from torch._C._autograd import (ProfilerConfig, ProfilerState, _ExperimentalConfig,
                                _disable_profiler, _disable_profiler_legacy, _enable_profiler,
                                _enable_profiler_legacy, _profiler_enabled)
from torch.autograd import profiler
