"""多个 GPU：集合通信的代价，模型的切分（TP、PP、EP），通信的 roofline，训练的一步。"""
