import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp
from jax import export
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(jax.devices()[:2], ("x",))
f = jax.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("x")))
exp = export.export(f)(jax.ShapeDtypeStruct((8,), jnp.float32))
mesh4 = Mesh(jax.devices(), ("x",))
g = jax.jit(exp.call, in_shardings=NamedSharding(mesh4, P("x")))
print(g(jnp.ones((8,), jnp.float32)))
