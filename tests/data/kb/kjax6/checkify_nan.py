import jax, jax.numpy as jnp
from jax.experimental import checkify

def f(x):
    return jnp.log(x) * 2

checked = jax.jit(checkify.checkify(f, errors=checkify.float_checks))
err, out = checked(jnp.array([-1.0, 2.0]))
err.throw()
