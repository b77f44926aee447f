import jax, jax.numpy as jnp
f = jax.pmap(lambda a, n: a * n, static_broadcasted_argnums=(1,))
print(f(jnp.ones((1, 3))))
