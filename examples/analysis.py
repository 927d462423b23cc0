# A typical agent step: load a CSV that was copied in with --file,
# summarise it, and save a plot into the workspace.
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("sales.csv")
print(df.groupby("region")["revenue"].sum().sort_values(ascending=False))
ax = df.pivot(index="month", columns="region", values="revenue").plot(marker="o")
ax.set_ylabel("revenue")
plt.savefig("revenue.png", dpi=80)
print("saved revenue.png")
