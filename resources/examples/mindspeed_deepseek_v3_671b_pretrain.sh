#!/bin/bash
# DeepSeek-V3 671B pre-training with MindSpeed-LLM on 32 Atlas A3 nodes (16 dies each = 512 NPUs).
# Example written for SAPP Planner; estimate it with:
#   sapp estimate resources/examples/mindspeed_deepseek_v3_671b_pretrain.sh --device A3
#
# 61 transformer layers (3 dense + 58 MoE) and one MTP module. Three noop layers pad the stack to 64
# so that DualPipeV can give every one of the 8 x 2 chunks exactly 4 layers: --num-layers counts them.

export CUDA_DEVICE_MAX_CONNECTIONS=1
export HCCL_CONNECT_TIMEOUT=3600

NPUS_PER_NODE=16
NNODES=32
NODE_RANK=0
MASTER_ADDR=localhost
MASTER_PORT=6000

TP=2
PP=8
EP=16                    # with --moe-tp-extend-ep experts spread over EP x TP = 32 ranks
CP=1
NUM_LAYERS=64            # 61 real + 3 noop
MBS=1
GBS=1920                 # DP = 512 / (2 x 8) = 32 -> 60 micro-batches per step
SEQ_LEN=4096

DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

# multi-head latent attention
MLA_ARGS="
    --multi-head-latent-attention \
    --q-lora-rank 1536 \
    --kv-lora-rank 512 \
    --qk-nope-head-dim 128 \
    --qk-rope-head-dim 64 \
    --v-head-dim 128 \
    --qk-layernorm
"

# mixture of experts: 256 routed experts (top-8) + 1 shared, first 3 layers dense
MOE_ARGS="
    --num-experts 256 \
    --moe-router-topk 8 \
    --moe-intermediate-size 2048 \
    --n-shared-experts 1 \
    --first-k-dense-replace 3 \
    --moe-layer-freq 1 \
    --moe-grouped-gemm \
    --moe-token-dispatcher-type alltoall \
    --moe-permutation-async-comm \
    --moe-tp-extend-ep \
    --moe-router-score-function sigmoid \
    --moe-router-enable-expert-bias
"

MTP_ARGS="
    --mtp-num-layers 1 \
    --mtp-loss-scaling-factor 0.3
"

PARALLEL_ARGS="
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --expert-model-parallel-size ${EP} \
    --context-parallel-size ${CP} \
    --sequence-parallel \
    --noop-layers 61,62,63 \
    --moe-fb-overlap \
    --schedules-method dualpipev
"

# memory: ZeRO-1 over DP, optimizer states swapped to the host in 8 slices, full recompute of the
# first 2 layers of every chunk
MEM_ARGS="
    --use-distributed-optimizer \
    --swap-optimizer \
    --swap-optimizer-times 8 \
    --recompute-granularity full \
    --recompute-method block \
    --recompute-num-layers 2
"

MODEL_ARGS="
    --use-mcore-models \
    --num-layers ${NUM_LAYERS} \
    --hidden-size 7168 \
    --ffn-hidden-size 18432 \
    --num-attention-heads 128 \
    --vocab-size 129280 \
    --padded-vocab-size 129280 \
    --make-vocab-size-divisible-by 1 \
    --max-position-embeddings 163840 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --position-embedding-type rope \
    --normalization RMSNorm \
    --swiglu
"

TRAIN_ARGS="
    --micro-batch-size ${MBS} \
    --global-batch-size ${GBS} \
    --seq-length ${SEQ_LEN} \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path /models/DeepSeek-V3 \
    --lr 1.0e-5 \
    --train-iters 2000 \
    --use-flash-attn \
    --use-fused-rmsnorm \
    --use-fused-swiglu \
    --no-masked-softmax-fusion \
    --attention-softmax-in-fp32 \
    --bf16
"

python -m torch.distributed.launch $DISTRIBUTED_ARGS pretrain_gpt.py \
    $MODEL_ARGS $MLA_ARGS $MOE_ARGS $MTP_ARGS \
    $PARALLEL_ARGS $MEM_ARGS $TRAIN_ARGS \
    --data-path /data/deepseek/pretrain_text_document \
    --distributed-backend nccl \
    | tee logs/pretrain_deepseek_v3_671b.log
