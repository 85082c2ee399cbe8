"""Grouped-query attention decode: 8 query heads share 2 K/V heads; the KV cache grows a token."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
batch, q_heads, kv_heads, head_dim, prompt = 1, 8, 2, 32, 64
hidden = q_heads * head_dim
wq = torch.randn(hidden, hidden) / hidden**0.5
wkv = torch.randn(hidden, 2 * kv_heads * head_dim) / hidden**0.5
k_cache = torch.randn(batch, kv_heads, prompt, head_dim)
v_cache = torch.randn(batch, kv_heads, prompt, head_dim)

x = torch.randn(batch, 1, hidden)
with torch.no_grad():
    for _ in range(4):
        q = (x @ wq).view(batch, 1, q_heads, head_dim).transpose(1, 2)
        k, v = (x @ wkv).view(batch, 1, 2 * kv_heads, head_dim).transpose(1, 2).chunk(2, dim=1)
        k_cache = torch.cat([k_cache, k], dim=2)
        v_cache = torch.cat([v_cache, v], dim=2)
        out = F.scaled_dot_product_attention(q, k_cache, v_cache, enable_gqa=True)
        x = out.transpose(1, 2).reshape(batch, 1, hidden)
