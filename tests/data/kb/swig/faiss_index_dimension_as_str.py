import faiss
import numpy as np

d = 64
xb = np.random.rand(1000, d).astype("float32")
index = faiss.IndexFlatL2(str(d))   # the dimension read from a config file, still a string
index.add(xb)
