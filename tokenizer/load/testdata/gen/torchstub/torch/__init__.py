# Import-only stand-in for torch: lets llama.cpp's converter run --vocab-only
# (which reads no tensor) in an environment without PyTorch.
import sys, types
class _Any:
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return _Any()
    def __getattr__(self, n): return _Any()
    def __or__(self, o): return self
    def __ror__(self, o): return self
    def __getitem__(self, k): return _Any()
    def __mro_entries__(self, bases): return (object,)
    def __enter__(self): return self
    def __exit__(self, *a): return False
    def __iter__(self): return iter(())
    def __bool__(self): return False
class Tensor: pass
class dtype: pass
class device: pass
class Size(tuple): pass
def __getattr__(name):
    return _Any()
_sub = {}
for n in ["nn", "nn.functional", "_tensor", "utils", "utils._pytree", "overrides", "distributed", "serialization"]:
    m = types.ModuleType("torch." + n)
    m.__getattr__ = lambda name: _Any()
    sys.modules["torch." + n] = m
__version__ = "0.0.0-stub"
