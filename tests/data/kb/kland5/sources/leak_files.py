import os
import tempfile


def read_all(paths):
    handles = []
    for p in paths:
        handles.append(open(p))  # never closed
    return [h.read() for h in handles]


d = tempfile.mkdtemp()
paths = []
for i in range(200):
    p = os.path.join(d, f"part{i}.txt")
    with open(p, "w") as f:
        f.write(str(i))
    paths.append(p)
print(len(read_all(paths)))
