#!/bin/bash
# Qwen2.5-VL-7B fine-tuning with MindSpeed-MM on one Atlas 800T A2 node (8 NPUs).
# Example written for SAPP Planner. MindSpeed-MM reads the model (and its per-stage layer split and
# recompute settings) from the model.json passed with --mm-model; give both files:
#   sapp estimate resources/examples/mindspeed_qwen2_5vl_7b_finetune.sh \
#                 resources/examples/mindspeed_qwen2_5vl_7b_model.json

export CUDA_DEVICE_MAX_CONNECTIONS=1

NPUS_PER_NODE=8
NNODES=1
NODE_RANK=0
MASTER_ADDR=localhost
MASTER_PORT=6000
WORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))

MM_DATA="./examples/qwen2.5vl/data_7b.json"
MM_MODEL="./mindspeed_qwen2_5vl_7b_model.json"

TP=2
PP=2
CP=1
MBS=1
GRAD_ACC_STEP=16
DP=$(($WORLD_SIZE/$TP/$PP/$CP))
GBS=$(($MBS*$GRAD_ACC_STEP*$DP))     # 1 x 16 x 2 = 32 samples per step

DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES \
    --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR \
    --master_port $MASTER_PORT
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --context-parallel-size ${CP} \
    --micro-batch-size ${MBS} \
    --global-batch-size ${GBS} \
    --seq-length 2048 \
    --tokenizer-type NullTokenizer \
    --vocab-size 152064 \
    --make-vocab-size-divisible-by 1 \
    --sequence-parallel \
    --use-flash-attn \
    --use-distributed-optimizer \
    --variable-seq-lengths \
    --lr 1.0e-5 \
    --train-iters 3000 \
    --bf16
"

MM_ARGS="
    --mm-data $MM_DATA \
    --mm-model $MM_MODEL
"

torchrun $DISTRIBUTED_ARGS pretrain_vlm.py \
    $GPT_ARGS \
    $MM_ARGS \
    --distributed-backend nccl \
    2>&1 | tee logs/finetune_qwen2_5vl_7b.log
