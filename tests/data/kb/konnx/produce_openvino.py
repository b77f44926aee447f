import sys, openvino as ov
w = sys.argv[1]
core = ov.Core()
if w == "ov_nofile":
    core.read_model("missing_model.xml")
elif w == "ov_device":
    m = core.read_model("m.onnx"); core.compile_model(m, sys.argv[2] if len(sys.argv)>2 else "GPU")
elif w == "ov_badfile":
    core.read_model("bad.onnx")
elif w == "ov_unsupported":
    core.read_model("unkop_m.onnx")
