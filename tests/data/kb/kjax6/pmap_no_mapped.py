import jax, jax.numpy as jnp
f = jax.pmap(lambda a: a + 1, in_axes=None, axis_size=1)
print(f(jnp.ones((1, 3))))
