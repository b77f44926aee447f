import sys, numpy as np, onnx, onnxruntime as ort
from onnx import helper, TensorProto
which = sys.argv[1]
def model(opset=17, ir=None, op="Relu", attrs=None, dtype=TensorProto.FLOAT, domain=""):
    x = helper.make_tensor_value_info("x", dtype, [1, 3])
    y = helper.make_tensor_value_info("y", dtype, [1, 3])
    n = helper.make_node(op, ["x"], ["y"], domain=domain, **(attrs or {}))
    g = helper.make_graph([n], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if ir: m.ir_version = ir
    return m
if which == "relu":
    onnx.save(model(), "m.onnx")
elif which == "nofile":
    ort.InferenceSession("missing_model.onnx", providers=["CPUExecutionProvider"])
elif which == "corrupt":
    open("bad.onnx","wb").write(b"not a protobuf \x00\xff\xfe garbage"*10)
    ort.InferenceSession("bad.onnx", providers=["CPUExecutionProvider"])
elif which == "inname":
    onnx.save(model(), "m.onnx"); s = ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
    s.run(None, {"input": np.zeros((1,3), np.float32)})
elif which == "dtype":
    onnx.save(model(), "m.onnx"); s = ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.zeros((1,3), np.float64)})
elif which == "rank":
    onnx.save(model(), "m.onnx"); s = ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.zeros((3,), np.float32)})
elif which == "dim":
    onnx.save(model(), "m.onnx"); s = ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.zeros((1,4), np.float32)})
elif which == "opsetnew":
    onnx.save(model(opset=40), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "irnew":
    onnx.save(model(ir=99), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "cuda":
    onnx.save(model(), "m.onnx"); s = ort.InferenceSession("m.onnx", providers=["CUDAExecutionProvider"]); print(s.get_providers())
elif which == "noimpl":
    onnx.save(model(op="Relu", dtype=TensorProto.STRING), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "noimpl2":
    onnx.save(model(op="Sqrt", dtype=TensorProto.INT32), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "unkop":
    onnx.save(model(op="FooBar"), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "customdom":
    onnx.save(model(op="FooBar", domain="com.example"), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "chk_attr":
    onnx.checker.check_model(model(attrs={"alpha": 1.0}), full_check=True)
elif which == "chk_noop":
    onnx.checker.check_model(model(op="FooBar"), full_check=True)
elif which == "chk_opsetold":
    onnx.checker.check_model(model(op="Gelu", opset=17), full_check=True)
elif which == "ort_attr":
    onnx.save(model(attrs={"alpha": 1.0}), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "ort_gelu_old":
    onnx.save(model(op="Gelu", opset=17), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "shape":
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]); w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("MatMul", ["x","w"], ["y"])], "g", [x,w], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.shape_inference.infer_shapes(m, strict_mode=True)
elif which == "shape_ort":
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]); w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("MatMul", ["x","w"], ["y"])], "g", [x,w], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "runtime_mm":
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"]); w = helper.make_tensor_value_info("w", TensorProto.FLOAT, ["c", "d"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("MatMul", ["x","w"], ["y"])], "g", [x,w], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx"); s=ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.zeros((2,3),np.float32), "w": np.zeros((4,5),np.float32)})
elif which == "opsetold":
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3]); b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "g", [a, b], [y]), opset_imports=[helper.make_opsetid("", 6)])
    m.ir_version = 3; onnx.save(m, "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
elif which == "badprov":
    onnx.save(model(), "m.onnx"); ort.InferenceSession("m.onnx", providers=["FooExecutionProvider"])
if which.startswith("impl_"):
    _, op, dt = which.split("_")
    onnx.save(model(op=op, dtype=getattr(TensorProto, dt), opset=21), "m.onnx"); ort.InferenceSession("m.onnx", providers=["CPUExecutionProvider"])
if which == "customlib":
    so = ort.SessionOptions(); so.register_custom_ops_library("libmy_custom_ops.so")
elif which == "onnxload_corrupt":
    open("bad.onnx","wb").write(b"not a protobuf \x00\xff\xfe garbage"*10); onnx.load("bad.onnx")
elif which == "extdata":
    import os
    from onnx import numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256]); y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])
    w = numpy_helper.from_array(np.ones((256, 256), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True, location="ext.onnx.data", size_threshold=0)
    os.remove("ext.onnx.data")
    ort.InferenceSession("ext.onnx", providers=["CPUExecutionProvider"])
