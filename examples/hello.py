import platform
import sys

print("Hello from inside the sandbox")
print("python", platform.python_version(), "on", platform.node())
print("arguments:", sys.argv[1:])
