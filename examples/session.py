import pandas as pd
df = pd.DataFrame({"city": ["Lyon", "Oslo", "Lima"], "temp": [14.5, 6.1, 19.2]})
warmest = df.sort_values("temp").iloc[-1]
print("warmest:", warmest.city)
df.temp.mean()
import time
time.sleep(5)
print("the sleep above was interrupted; df is still here:", len(df), "rows")
