"""Model shapes several test modules price (published dimensions): one definition each."""

from __future__ import annotations

from estimator import ModelSpec

LLAMA3_70B = ModelSpec(name="llama3-70b", hidden_size=8192, num_layers=80, num_attention_heads=64, num_kv_heads=8,
                       ffn_hidden_size=28672, vocab_size=128256)
DEEPSEEK_V3 = ModelSpec(name="deepseek-v3", hidden_size=7168, num_layers=61, first_k_dense=3, ffn_hidden_size=18432,
                        num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512, head_dim=128,
                        qk_rope_head_dim=64, v_head_dim=128, num_experts=256, experts_per_token=8,
                        num_shared_experts=1, moe_ffn_hidden_size=2048, vocab_size=129280, mtp_layers=1)
