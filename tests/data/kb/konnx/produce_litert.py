import sys
from ai_edge_litert.interpreter import Interpreter
w = sys.argv[1]
if w == "tfl_badfile":
    open("bad.tflite", "wb").write(b"version https://git-lfs.github.com/spec/v1\noid sha256:0000\nsize 123\n")
    Interpreter(model_path="bad.tflite")
elif w == "tfl_nofile":
    Interpreter(model_path="missing.tflite")
