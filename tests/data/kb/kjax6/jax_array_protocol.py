import jax, jax.numpy as jnp

class Param:
    def __init__(self, value):
        self.value = value
    def __jax_array__(self):
        return self.value

p = Param(jnp.ones(3))
print(jax.jit(lambda a: a * 2)(p))
