"""Paddle's event-type enums as plain ints, with the names its tables print.

Values follow paddle.base.core.TracerEventType / TracerMemEventType of Paddle 3.3.1;
the JSON "cat" field is exactly the enum name.
"""

HOST_TYPES = (
    "Operator",
    "Dataloader",
    "ProfileStep",
    "CudaRuntime",
    "Kernel",
    "Memcpy",
    "Memset",
    "UserDefined",
    "OperatorInner",
    "Forward",
    "Backward",
    "Optimization",
    "Communication",
    "PythonOp",
    "PythonUserDefined",
    "DygraphKernelLaunch",
    "StaticKernelLaunch",
)
TYPE_ID = {name: i for i, name in enumerate(HOST_TYPES)}
# Types seen in older or other builds; kept so such traces still load.
_EXTRA = ("MluRuntime", "CustomRuntime")
for _name in _EXTRA:
    TYPE_ID[_name] = len(TYPE_ID)
TYPE_NAMES = list(HOST_TYPES) + list(_EXTRA)

OPERATOR = TYPE_ID["Operator"]
DATALOADER = TYPE_ID["Dataloader"]
PROFILE_STEP = TYPE_ID["ProfileStep"]
CUDA_RUNTIME = TYPE_ID["CudaRuntime"]
KERNEL = TYPE_ID["Kernel"]
MEMCPY = TYPE_ID["Memcpy"]
MEMSET = TYPE_ID["Memset"]
USER_DEFINED = TYPE_ID["UserDefined"]
OPERATOR_INNER = TYPE_ID["OperatorInner"]
FORWARD = TYPE_ID["Forward"]
BACKWARD = TYPE_ID["Backward"]
OPTIMIZATION = TYPE_ID["Optimization"]
COMMUNICATION = TYPE_ID["Communication"]
PYTHON_USER_DEFINED = TYPE_ID["PythonUserDefined"]

DEVICE_CATS = {"Kernel": KERNEL, "Memcpy": MEMCPY, "Memset": MEMSET}
RUNTIME_CATS = {
    "CudaRuntime": CUDA_RUNTIME,
    "MluRuntime": TYPE_ID["MluRuntime"],
    "CustomRuntime": TYPE_ID["CustomRuntime"],
}

MEM_TYPES = ("Allocate", "Free", "ReservedAllocate", "ReservedFree")
MEM_TYPE_ID = {name: i for i, name in enumerate(MEM_TYPES)}
ALLOCATE, FREE, RESERVED_ALLOCATE, RESERVED_FREE = range(4)

# Model-perspective stages, in the order Paddle's Model Summary prints them.
MODEL_STAGES = {DATALOADER: "Dataloader", FORWARD: "Forward", BACKWARD: "Backward", OPTIMIZATION: "Optimization"}
