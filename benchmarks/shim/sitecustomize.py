"""Benchmark-only shim (benchmarks/timm_models.py): timm imports torchvision (transforms,
FrozenBatchNorm2d) and PIL at import time, and the torchvision wheel for torch 2.13 on this index does
not import on CPU. With this folder on PYTHONPATH, any torchvision.* or PIL.* import yields placeholders
that raise if anything is built from them; the models there build none of them."""

import importlib.abc
import importlib.machinery
import sys
import types


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Meta(name, (_Placeholder,), {})


class _Placeholder(metaclass=_Meta):
    def __init__(self, *a, **k):
        raise RuntimeError("benchmarks/shim: torchvision and PIL are not available here")

    def __init_subclass__(cls, **k):
        pass


class _Mod(types.ModuleType):
    def __getattr__(self, name):
        if name == "__version__":
            return "0.0"
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].islower():
            return _load(self.__name__ + "." + name)
        return _Meta(name, (_Placeholder,), {})


def _load(fullname):
    if fullname not in sys.modules:
        m = _Mod(fullname)
        m.__path__ = []
        m.__spec__ = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        sys.modules[fullname] = m
    return sys.modules[fullname]


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in ("torchvision", "PIL"):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _load(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
