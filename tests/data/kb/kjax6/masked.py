import numpy as np, jax.numpy as jnp
data = np.ma.masked_invalid(np.array([1.0, np.nan, 3.0]))
print(jnp.sum(data))
