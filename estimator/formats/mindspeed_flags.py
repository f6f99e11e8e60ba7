"""The vocabulary of MindSpeed launch scripts (docs/model.md#frameworks): which flags and shell variables mean what,
shared by the script reader and writer so that both speak of the same names."""

from __future__ import annotations

# Reading.format of the two kinds of MindSpeed file
SCRIPT, MODEL = "mindspeed_script", "mindspeed_model"
# Reading.format of a Megatron-LM launch script and of a Megatron-LM recipe YAML (arguments under ARGS:)
MEGATRON_SCRIPT, MEGATRON_RECIPE = "megatron_script", "megatron_recipe"
# text that marks a .sh file as a MindSpeed / Megatron launch script
MARKERS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--num-layers", "--micro-batch-size",
           "--global-batch-size", "pretrain_gpt.py", "pretrain_vlm.py", "posttrain_gpt.py", "pretrain_mamba.py")
# the --context-parallel-algo value written for each cp_algo (megatron_strategy_args.CP_ALGOS reads them)
CP_ALGO_FLAGS = {"ring": "megatron_cp_algo", "ulysses": "ulysses_cp_algo", "hybrid": "hybrid_cp_algo",
                 "allgather": "kvallgather_cp_algo"}
# shell variables that state the devices per node, the node count, and the micro-batches per step
PER_NODE_VARS = ("NPUS_PER_NODE", "GPUS_PER_NODE", "NPROC_PER_NODE")
NODE_VARS = ("NNODES", "NUM_NODES")
MICRO_BATCH_VARS = ("GRAD_ACC_STEP", "GRAD_ACC_STEPS", "GRADIENT_ACCUMULATION_STEPS", "ACC_STEPS")
# flags a new flag is written next to when no related flag is present
ANCHORS = ("--pipeline-model-parallel-size", "--tensor-model-parallel-size", "--micro-batch-size",
           "--global-batch-size", "--seq-length", "--num-layers")
RECOMPUTE_FLAGS = ("--recompute-granularity", "--recompute-method", "--recompute-num-layers",
                   "--recompute-activation-function", "--recompute-activation-function-num-layers",
                   "--recompute-norm", "--recompute-norm-num-layers", "--recompute-modules",
                   "--enable-recompute-layers-per-pp-rank", "--recompute-mla-up-proj")
# Strategy fields a launch script has no flag for, and those a MindSpeed-MM model.json owns
FIXED_FIELDS = ("d_rep", "d_sh", "n_s", "offset", "offset_rule", "mtp_in_offset", "emb_out_in_offset",
                "master_bytes", "n_optimizer_states", "dropout_mask_bytes", "norm_bytes", "loss_bytes", "reduce_bytes",
                "vocab_emb_dp", "vocab_parallel_loss", "recompute_slice_activation", "offload_layers",
                "tp_comm_overlap_cfg")
MODEL_JSON_FIELDS = ("vision_partition", "frozen_modules")
