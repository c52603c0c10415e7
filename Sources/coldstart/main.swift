print("temp")
