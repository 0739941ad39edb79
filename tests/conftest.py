"""Every in-process test sees two CPU devices, as a training job does on a
2-core machine (runtime.configure): the seed axis of a group is then really
spread over devices (seed_axis), whatever the machine running the tests."""
import jax

jax.config.update("jax_num_cpu_devices", 2)
