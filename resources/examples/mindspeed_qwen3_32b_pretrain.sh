#!/bin/bash
# Qwen3-32B pre-training with MindSpeed-LLM on 4 Atlas 800T A2 nodes (32 NPUs).
# Example written for SAPP Planner; estimate it with:
#   sapp estimate resources/examples/mindspeed_qwen3_32b_pretrain.sh
# Layout: TP 4 x PP 4 (two virtual chunks of 8 layers per stage) -> DP 2.

export CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True

NPUS_PER_NODE=8
NNODES=4
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6000
WORLD_SIZE=$((NPUS_PER_NODE * NNODES))

DATA_PATH="/data/qwen3/pretrain_text_document"
TOKENIZER_PATH="/models/Qwen3-32B"

# parallel layout
TP=4
PP=4
LAYERS_PER_VCHUNK=8      # 64 layers / (PP 4 x 8) = 2 virtual chunks per stage
CP=1

# batch: m = GBS / (MBS x DP) = 64 / (1 x 2) = 32 micro-batches per step
MBS=1
GBS=64
SEQ_LEN=4096

DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES \
    --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR \
    --master_port $MASTER_PORT
"

# Qwen3-32B shape: GQA 64/8 with head_dim 128, q/k RMSNorm, untied output layer
MODEL_ARGS="
    --use-mcore-models \
    --num-layers 64 \
    --hidden-size 5120 \
    --ffn-hidden-size 25600 \
    --num-attention-heads 64 \
    --group-query-attention \
    --num-query-groups 8 \
    --kv-channels 128 \
    --qk-layernorm \
    --max-position-embeddings ${SEQ_LEN} \
    --padded-vocab-size 151936 \
    --make-vocab-size-divisible-by 1 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --position-embedding-type rope \
    --rotary-base 1000000 \
    --normalization RMSNorm \
    --swiglu
"

PARALLEL_ARGS="
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --num-layers-per-virtual-pipeline-stage ${LAYERS_PER_VCHUNK} \
    --context-parallel-size ${CP} \
    --sequence-parallel \
    --use-distributed-optimizer
"

# memory: recompute the first 2 layers of every virtual chunk completely
MEMORY_ARGS="
    --recompute-granularity full \
    --recompute-method block \
    --recompute-num-layers 2
"

TRAIN_ARGS="
    --micro-batch-size ${MBS} \
    --global-batch-size ${GBS} \
    --seq-length ${SEQ_LEN} \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --lr 1.0e-5 \
    --min-lr 1.0e-6 \
    --lr-decay-style cosine \
    --weight-decay 0.1 \
    --clip-grad 1.0 \
    --train-iters 5000 \
    --use-flash-attn \
    --use-fused-rmsnorm \
    --use-fused-swiglu \
    --use-fused-rotary-pos-emb \
    --no-masked-softmax-fusion \
    --attention-softmax-in-fp32 \
    --bf16
"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $MODEL_ARGS \
    $PARALLEL_ARGS \
    $MEMORY_ARGS \
    $TRAIN_ARGS \
    --data-path $DATA_PATH \
    --split 100,0,0 \
    --distributed-backend nccl \
    | tee logs/pretrain_qwen3_32b.log
