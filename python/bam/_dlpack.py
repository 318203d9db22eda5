# SPDX-License-Identifier: MIT
"""DLPack export of memory bam owns (bam.Buffer): a DLManagedTensor in a PyCapsule
named "dltensor", built with ctypes (DLPack v0.8 ABI, dlpack.h). The consumer
(torch.from_dlpack, cupy.from_dlpack, numpy.from_dlpack) calls the deleter when it is
done; until then the producer object is kept alive here."""
import ctypes

kDLCPU, kDLCUDA = 1, 2
kDLInt, kDLUInt, kDLFloat, kDLBfloat = 0, 1, 2, 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_alive = {}  # address of the DLManagedTensor -> (it, shape, owner)


@_DELETER
def _deleter(p):
    _alive.pop(ctypes.addressof(p.contents), None)


# the destructor gets the capsule while it is being freed (reference count 0): as a
# plain pointer, never as a Python object (that would resurrect it)
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api = ctypes.PyDLL(None)  # the interpreter's own symbols, called with the GIL held
_PyCapsule_IsValid = _api.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_PyCapsule_GetPointer = _api.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(cap):
    # a capsule never consumed still holds "dltensor": free what it owns (a consumer
    # renames it "used_dltensor" and calls the deleter itself)
    if _PyCapsule_IsValid(cap, b"dltensor"):
        _alive.pop(_PyCapsule_GetPointer(cap, b"dltensor"), None)


def dtype_code(name):
    return {"float32": (kDLFloat, 32), "float16": (kDLFloat, 16), "bfloat16": (kDLBfloat, 16),
            "float64": (kDLFloat, 64), "int32": (kDLInt, 32), "int64": (kDLInt, 64), "uint8": (kDLUInt, 8),
            "int8": (kDLInt, 8), "int16": (kDLInt, 16), "uint16": (kDLUInt, 16), "uint32": (kDLUInt, 32),
            "uint64": (kDLUInt, 64)}[name]


def capsule(owner, ptr, shape, dtype_name, on_gpu, device_id=0):
    """A "dltensor" capsule for a C-contiguous tensor of 'shape' at device address ptr;
    owner is kept alive until the consumer's deleter runs."""
    m = DLManagedTensor()
    shp = (ctypes.c_int64 * len(shape))(*shape)
    code, bits = dtype_code(dtype_name)
    m.dl_tensor = DLTensor(ptr, DLDevice(kDLCUDA if on_gpu else kDLCPU, device_id if on_gpu else 0), len(shape),
                           DLDataType(code, bits, 1), shp, None, 0)
    m.manager_ctx = None
    m.deleter = _deleter
    addr = ctypes.addressof(m)
    _alive[addr] = (m, shp, owner)
    return _PyCapsule_New(addr, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))
