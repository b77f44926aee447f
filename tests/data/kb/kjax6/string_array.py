import numpy as np, jax.numpy as jnp
labels = np.array(["cat", "dog", "cat"])
print(jnp.asarray(labels))
