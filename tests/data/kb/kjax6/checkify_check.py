import jax, jax.numpy as jnp
from jax.experimental import checkify

def step(x):
    checkify.check(jnp.all(x > 0), "inputs must be positive, got min {m}", m=x.min())
    return jnp.sqrt(x)

err, out = jax.jit(checkify.checkify(step))(jnp.array([1.0, -2.0]))
err.throw()
