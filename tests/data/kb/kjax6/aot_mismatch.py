import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(jax.devices(), ("x",))
x = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", None)))
compiled = jax.jit(lambda a: a + 1).lower(x).compile()
y = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P(None, "x")))
print(compiled(y))
