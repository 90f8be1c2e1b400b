import Torch
print("benchmarks: placeholder")
