"""run file：一次 benchmark 写下的全部内容，读成有类型的记录，并由记录生成它的 JSON Schema。"""
