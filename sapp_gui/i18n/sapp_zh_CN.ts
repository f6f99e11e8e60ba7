<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>Balance</name>
    <message>
        <source>&amp;Balance pipeline</source>
        <translation>均衡流水线(&amp;B)</translation>
    </message>
    <message>
        <source>Choose the layers per stage and the per-stage recompute that minimise the pipeline time within the budget (exact)</source>
        <translation>在预算内选择每个阶段的层数和重计算层数，使流水线时间最短（精确求解）</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>B&amp;udget:</source>
        <translation>预算(&amp;U)：</translation>
    </message>
    <message>
        <source>the plan&apos;s</source>
        <translation>沿用计划</translation>
    </message>
    <message>
        <source>memory budget per device for the balance; the plan&apos;s budget unless set</source>
        <translation>均衡时每卡的显存预算；不设置则沿用计划的预算</translation>
    </message>
    <message>
        <source>&amp;Apply to forms</source>
        <translation>应用到表单(&amp;A)</translation>
    </message>
    <message>
        <source>Put the new layer split and recompute lists into the forms (one undoable edit)</source>
        <translation>把新的层划分和重计算列表填入表单（一次可撤销的编辑）</translation>
    </message>
    <message>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <source>Layers</source>
        <translation>层数</translation>
    </message>
    <message>
        <source>Offset</source>
        <translation>偏移</translation>
    </message>
    <message>
        <source>Recompute full / sel. / comm</source>
        <translation>重计算 完全 / 选择性 / 通信</translation>
    </message>
    <message>
        <source>GiB before</source>
        <translation>均衡前 GiB</translation>
    </message>
    <message>
        <source>GiB after</source>
        <translation>均衡后 GiB</translation>
    </message>
    <message>
        <source>ms before</source>
        <translation>均衡前 ms</translation>
    </message>
    <message>
        <source>ms after</source>
        <translation>均衡后 ms</translation>
    </message>
    <message>
        <source>Memory per stage: before (pale) and after the balance</source>
        <translation>各阶段显存：均衡前（浅色）与均衡后</translation>
    </message>
    <message>
        <source>Per stage</source>
        <translation>逐阶段</translation>
    </message>
    <message>
        <source>In the config&apos;s own keys</source>
        <translation>配置文件中的写法</translation>
    </message>
    <message>
        <source>Balancing {0} stages… (an exact search; large plans take a while)</source>
        <translation>正在均衡 {0} 个阶段…（精确搜索，大规模计划需要一些时间）</translation>
    </message>
    <message>
        <source>Cancelled.</source>
        <translation>已取消。</translation>
    </message>
    <message>
        <source>Cannot balance this plan: {0}</source>
        <translation>无法均衡此计划：{0}</translation>
    </message>
    <message>
        <source>before</source>
        <translation>均衡前</translation>
    </message>
    <message>
        <source>after</source>
        <translation>均衡后</translation>
    </message>
    <message>
        <source>Pipeline time objective {0} → {1} ({2}% faster); peak {3} → {4} GiB; step time {5} → {6} s; {7}, {8} s.</source>
        <translation>流水线时间目标 {0} → {1}（加快 {2}%）；峰值 {3} → {4} GiB；单步时间 {5} → {6} s；{7}，用时 {8} s。</translation>
    </message>
    <message>
        <source>exact</source>
        <translation>精确解</translation>
    </message>
    <message>
        <source>approximate for this schedule</source>
        <translation>对该调度为近似解</translation>
    </message>
    <message>
        <source>Applied to the forms (Edit ▸ Undo takes it back).</source>
        <translation>已应用到表单（编辑 ▸ 撤销 可恢复）。</translation>
    </message>
    <message>
        <source>The strategy changed since: run the balancer again to apply.</source>
        <translation>此后策略已变化：请重新运行均衡后再应用。</translation>
    </message>
    <message>
        <source>Balance the pipeline of the current strategy: layers per stage and recompute per stage.</source>
        <translation>均衡当前策略的流水线：每个阶段的层数与重计算。</translation>
    </message>
    <message>
        <source>Balance pipeline</source>
        <translation>均衡流水线</translation>
    </message>
</context>
<context>
    <name>Calibrate</name>
    <message>
        <source>allocator slack × (measured / modelled)</source>
        <translation>分配器余量 ×（实测 / 模型）</translation>
    </message>
    <message>
        <source>allocator slack, fraction of the tensor peak</source>
        <translation>分配器余量，占张量峰值的比例</translation>
    </message>
    <message>
        <source>HCCL buffers × (measured / documented)</source>
        <translation>HCCL 缓冲 ×（实测 / 文档规则）</translation>
    </message>
    <message>
        <source>runtime context</source>
        <translation>运行时上下文</translation>
    </message>
    <message>
        <source>matmul efficiency</source>
        <translation>矩阵乘效率</translation>
    </message>
    <message>
        <source>Calibrate from log</source>
        <translation>从日志校准</translation>
    </message>
    <message>
        <source>Fit the device-level memory (allocator slack, runtime context, HCCL buffers) and the matmul efficiency from the logs of a run of the plan in the forms ({0}). A log of another plan is refused.</source>
        <translation>根据表单中计划（{0}）一次运行的日志，拟合设备级显存（分配器余量、运行时上下文、HCCL 缓冲）和矩阵乘效率。其他计划的日志会被拒绝。</translation>
    </message>
    <message>
        <source>Logs:</source>
        <translation>日志：</translation>
    </message>
    <message>
        <source>Profile name:</source>
        <translation>配置档名称：</translation>
    </message>
    <message>
        <source>Add logs…</source>
        <translation>添加日志…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Fitted terms</source>
        <translation>拟合的项</translation>
    </message>
    <message>
        <source>Every stage, before → after (GiB; error against the log)</source>
        <translation>各阶段，校准前 → 校准后（GiB；相对日志的误差）</translation>
    </message>
    <message>
        <source>term</source>
        <translation>项</translation>
    </message>
    <message>
        <source>value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>from</source>
        <translation>来源</translation>
    </message>
    <message>
        <source>stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <source>log: max allocated</source>
        <translation>日志：最大已分配</translation>
    </message>
    <message>
        <source>log: max reserved</source>
        <translation>日志：最大已保留</translation>
    </message>
    <message>
        <source>log: device</source>
        <translation>日志：设备</translation>
    </message>
    <message>
        <source>allocator peak before → after</source>
        <translation>分配器峰值 前 → 后</translation>
    </message>
    <message>
        <source>device peak before → after</source>
        <translation>设备峰值 前 → 后</translation>
    </message>
    <message>
        <source>Save and apply</source>
        <translation>保存并应用</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>Logs of a run of this plan</source>
        <translation>此计划一次运行的日志</translation>
    </message>
    <message>
        <source>Logs (*.log *.txt *.out *.json);;All files (*)</source>
        <translation>日志 (*.log *.txt *.out *.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Add the logs of a run of this plan (Megatron/MindSpeed, torchtitan, CANN plog, MindSpore, memory_stats JSON).</source>
        <translation>请添加此计划一次运行的日志（Megatron/MindSpeed、torchtitan、CANN plog、MindSpore、memory_stats JSON）。</translation>
    </message>
    <message>
        <source>Reading {0} log(s)…</source>
        <translation>正在读取 {0} 个日志…</translation>
    </message>
    <message>
        <source>internal error: {0}</source>
        <translation>内部错误：{0}</translation>
    </message>
    <message>
        <source>Not calibrated: {0}</source>
        <translation>未校准：{0}</translation>
    </message>
    <message>
        <source>{0} term(s) fitted from {1} log(s) of {2} on {3}.</source>
        <translation>已从 {2} 在 {3} 上的 {1} 个日志拟合 {0} 项。</translation>
    </message>
    <message>
        <source>The logs determine none of the terms; nothing to save.</source>
        <translation>这些日志无法确定任何一项；没有可保存的内容。</translation>
    </message>
    <message>
        <source>Not determined: {0}</source>
        <translation>无法确定：{0}</translation>
    </message>
    <message>
        <source>Step time: log {0} s; estimate {1} s ({2}) → {3} s ({4})</source>
        <translation>单步时间：日志 {0} s；估算 {1} s（{2}）→ {3} s（{4}）</translation>
    </message>
    <message>
        <source>Not saved: {0}</source>
        <translation>未保存：{0}</translation>
    </message>
    <message>
        <source>Open the config of the run first, then calibrate from its logs.</source>
        <translation>请先打开该次运行的配置，再用其日志校准。</translation>
    </message>
</context>
<context>
    <name>Category</name>
    <message>
        <source>Parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>Gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>Optimizer states</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <source>Activations</source>
        <translation>激活值</translation>
    </message>
    <message>
        <source>Comm. buffers</source>
        <translation>通信缓冲</translation>
    </message>
    <message>
        <source>Working</source>
        <translation>工作内存</translation>
    </message>
    <message>
        <source>Reserve</source>
        <translation>预留</translation>
    </message>
    <message>
        <source>Workspaces</source>
        <translation>库工作区</translation>
    </message>
    <message>
        <source>Allocator slack</source>
        <translation>分配器余量</translation>
    </message>
    <message>
        <source>Runtime context</source>
        <translation>运行时上下文</translation>
    </message>
    <message>
        <source>Comm. libraries</source>
        <translation>通信库缓冲</translation>
    </message>
</context>
<context>
    <name>Charts</name>
    <message>
        <source>Memory per device (GiB)</source>
        <translation>每卡显存 (GiB)</translation>
    </message>
    <message>
        <source>Total</source>
        <translation>合计</translation>
    </message>
    <message>
        <source>device-peak band</source>
        <translation>设备峰值区间</translation>
    </message>
    <message>
        <source>capacity</source>
        <translation>容量</translation>
    </message>
    <message>
        <source>budget</source>
        <translation>预算</translation>
    </message>
    <message>
        <source>over budget</source>
        <translation>超出预算</translation>
    </message>
    <message>
        <source>optimizer-step peak</source>
        <translation>优化器步峰值</translation>
    </message>
    <message>
        <source>pinned (left)</source>
        <translation>已固定基线（左）</translation>
    </message>
    <message>
        <source>pinned peak</source>
        <translation>已固定基线峰值</translation>
    </message>
    <message>
        <source>Memory per pipeline stage</source>
        <translation>各流水线阶段的显存</translation>
    </message>
    <message>
        <source>Pipeline stage</source>
        <translation>流水线阶段</translation>
    </message>
    <message>
        <source>Chart legend</source>
        <translation>图例</translation>
    </message>
    <message>
        <source>Estimating…</source>
        <translation>正在估算…</translation>
    </message>
    <message>
        <source>peak {0} GiB</source>
        <translation>峰值 {0} GiB</translation>
    </message>
    <message>
        <source>same degrees, sequence and batch</source>
        <translation>并行度、序列长度与批大小均相同</translation>
    </message>
    <message>
        <source>another pipeline depth: stages not comparable</source>
        <translation>流水线深度不同：各阶段不可比</translation>
    </message>
    <message>
        <source>pinned peak {0} GiB (pp {1})</source>
        <translation>已固定基线峰值 {0} GiB（pp {1}）</translation>
    </message>
    <message>
        <source>Pinned baseline: {0}</source>
        <translation>固定基线：{0}</translation>
    </message>
    <message>
        <source>capacity = budget {0} GiB</source>
        <translation>容量 = 预算 {0} GiB</translation>
    </message>
    <message>
        <source>capacity {0} GiB</source>
        <translation>容量 {0} GiB</translation>
    </message>
    <message>
        <source>budget {0} GiB</source>
        <translation>预算 {0} GiB</translation>
    </message>
    <message>
        <source>GiB per device</source>
        <translation>每卡 GiB</translation>
    </message>
    <message>
        <source>Stage {0}: {1} GiB ({2}% of the {3} GiB budget)</source>
        <translation>阶段 {0}：{1} GiB（占 {3} GiB 预算的 {2}%）</translation>
    </message>
    <message>
        <source>Stage {0}: {1} GiB</source>
        <translation>阶段 {0}：{1} GiB</translation>
    </message>
    <message>
        <source>optimizer-step peak {0} GiB</source>
        <translation>优化器步峰值 {0} GiB</translation>
    </message>
    <message>
        <source>tensor peak {0} GiB (max allocated) · allocator peak {1} GiB (max reserved) · device peak {2} GiB ({3}–{4})</source>
        <translation>张量峰值 {0} GiB（最大已分配）· 分配器峰值 {1} GiB（最大已保留）· 设备峰值 {2} GiB（{3}–{4}）</translation>
    </message>
    <message>
        <source>vs pinned: {0} GiB</source>
        <translation>相对固定基线：{0} GiB</translation>
    </message>
    <message>
        <source>Export chart</source>
        <translation>导出图表</translation>
    </message>
    <message>
        <source>Copy chart (PNG)</source>
        <translation>复制图表（PNG）</translation>
    </message>
    <message>
        <source>Copy numbers (tab-separated)</source>
        <translation>复制数值（制表符分隔）</translation>
    </message>
    <message>
        <source>Export as PNG…</source>
        <translation>导出为 PNG…</translation>
    </message>
    <message>
        <source>Export as SVG…</source>
        <translation>导出为 SVG…</translation>
    </message>
    <message>
        <source>Export numbers as CSV…</source>
        <translation>导出数据为 CSV…</translation>
    </message>
    <message>
        <source>PNG image (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <source>SVG image (*.svg)</source>
        <translation>SVG 图像 (*.svg)</translation>
    </message>
    <message>
        <source>CSV table (*.csv)</source>
        <translation>CSV 表格 (*.csv)</translation>
    </message>
    <message>
        <source>Export chart as {0}</source>
        <translation>将图表导出为 {0}</translation>
    </message>
    <message>
        <source>pale</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>solid</source>
        <translation>实色</translation>
    </message>
    <message>
        <source>different pipeline depths ({0}): each group holds the same layers, the stages of deeper pipelines side by side ({1}0, {1}1, …)</source>
        <translation>流水线深度不同（{0}）：每组承载相同的层，较深流水线的各阶段并排显示（{1}0、{1}1、…）</translation>
    </message>
    <message>
        <source>(in each stage from left to right: {0})</source>
        <translation>（每个阶段内从左到右依次为：{0}）</translation>
    </message>
    <message>
        <source>Pipeline stage of {0} (pp {1}); deeper pipelines&apos; stages under the one holding their layers</source>
        <translation>{0} 的流水线阶段（pp {1}）；较深流水线的阶段归入承载相同层的阶段下</translation>
    </message>
    <message>
        <source>{0} · stage {1}</source>
        <translation>{0} · 阶段 {1}</translation>
    </message>
</context>
<context>
    <name>Clipboard</name>
    <message>
        <source>Copy table (tab-separated)</source>
        <translation>复制表格（制表符分隔）</translation>
    </message>
    <message>
        <source>Copy the numbers (tab-separated)</source>
        <translation>复制数值（制表符分隔）</translation>
    </message>
</context>
<context>
    <name>Compare</name>
    <message>
        <source>Add &amp;current</source>
        <translation>添加当前(&amp;C)</translation>
    </message>
    <message>
        <source>The strategy in the forms, as estimated now</source>
        <translation>表单中的策略（按当前估算结果）</translation>
    </message>
    <message>
        <source>Add &amp;pinned</source>
        <translation>添加固定基线(&amp;P)</translation>
    </message>
    <message>
        <source>The pinned baseline (Edit ▸ Pin baseline)</source>
        <translation>已固定的基线（编辑 ▸ 固定基线）</translation>
    </message>
    <message>
        <source>Add &amp;file…</source>
        <translation>添加文件(&amp;F)…</translation>
    </message>
    <message>
        <source>Another config, estimated as it is written</source>
        <translation>另一个配置文件，按其原样估算</translation>
    </message>
    <message>
        <source>&amp;Remove</source>
        <translation>移除(&amp;R)</translation>
    </message>
    <message>
        <source>C&amp;lear</source>
        <translation>清空(&amp;L)</translation>
    </message>
    <message>
        <source>Memory per stage, grouped per stage</source>
        <translation>各阶段显存（按阶段分组）</translation>
    </message>
    <message>
        <source>Each column against A. Category rows: GiB at each strategy&apos;s peak stage; green is better, vermillion worse.</source>
        <translation>各列均与 A 比较。类别行：各策略峰值阶段上的 GiB；绿色表示更好，朱红色表示更差。</translation>
    </message>
    <message>
        <source>At most {0} strategies are compared; remove one first.</source>
        <translation>最多对比 {0} 个策略，请先移除一个。</translation>
    </message>
    <message>
        <source>Reading {0}…</source>
        <translation>正在读取 {0}…</translation>
    </message>
    <message>
        <source>Cannot add {0}: {1}</source>
        <translation>无法添加 {0}：{1}</translation>
    </message>
    <message>
        <source>Add config(s) to compare</source>
        <translation>添加要对比的配置文件</translation>
    </message>
    <message>
        <source>Configs (*.yaml *.yml *.json *.toml *.sh);;All files (*)</source>
        <translation>配置文件 (*.yaml *.yml *.json *.toml *.sh);;所有文件 (*)</translation>
    </message>
    <message>
        <source>cannot be estimated: {0}</source>
        <translation>无法估算：{0}</translation>
    </message>
    <message>
        <source>estimating…</source>
        <translation>估算中…</translation>
    </message>
    <message>
        <source>Add two or more strategies: the current one, the pinned baseline, rows of a search (Add to compare) or other files.</source>
        <translation>请添加两个或更多策略：当前策略、固定基线、搜索结果中的行（“加入对比”）或其他配置文件。</translation>
    </message>
    <message>
        <source>Peak GiB</source>
        <translation>峰值 GiB</translation>
    </message>
    <message>
        <source>Peak stage</source>
        <translation>峰值阶段</translation>
    </message>
    <message>
        <source>Stages</source>
        <translation>阶段数</translation>
    </message>
    <message>
        <source>Headroom GiB</source>
        <translation>余量 GiB</translation>
    </message>
    <message>
        <source>Step time s</source>
        <translation>单步时间 s</translation>
    </message>
    <message>
        <source>Tokens/s per device</source>
        <translation>每卡 tokens/s</translation>
    </message>
    <message>
        <source>MFU %</source>
        <translation>MFU %</translation>
    </message>
    <message>
        <source>Devices</source>
        <translation>设备数</translation>
    </message>
    <message>
        <source>{0} GiB</source>
        <translation>{0} GiB</translation>
    </message>
</context>
<context>
    <name>Document</name>
    <message>
        <source>user presets ignored: {0}</source>
        <translation>已忽略用户预设：{0}</translation>
    </message>
    <message>
        <source>edited here (the file gives {0})</source>
        <translation>已在此编辑（文件中为 {0}）</translation>
    </message>
    <message>
        <source>{0} (was {1})</source>
        <translation>{0}（原为 {1}）</translation>
    </message>
    <message>
        <source>default: {0}</source>
        <translation>默认值：{0}</translation>
    </message>
    <message>
        <source>device preset {0}</source>
        <translation>设备预设 {0}</translation>
    </message>
    <message>
        <source>default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>unset</source>
        <translation>未设置</translation>
    </message>
    <message>
        <source>user profiles ignored: {0}</source>
        <translation>已忽略用户配置档：{0}</translation>
    </message>
    <message>
        <source>user layer kinds ignored: {0}</source>
        <translation>已忽略用户层类型：{0}</translation>
    </message>
</context>
<context>
    <name>Explain</name>
    <message>
        <source>no per-layer trace for this category: the stage&apos;s value is shown</source>
        <translation>该类别没有逐层的计算过程：显示的是整个阶段的值</translation>
    </message>
    <message>
        <source>{0} is priced inside this maximum</source>
        <translation>{0} 在这一最大值中计算</translation>
    </message>
    <message>
        <source>{0} has no separate trace: the stage total is shown</source>
        <translation>{0} 没有单独的计算过程：显示的是阶段总量</translation>
    </message>
    <message>
        <source>elements</source>
        <translation>个元素</translation>
    </message>
    <message>
        <source>Select a bar segment to see how its number is computed.</source>
        <translation>选择柱形中的一段，查看其数值的计算方式。</translation>
    </message>
    <message>
        <source>Quantity</source>
        <translation>量</translation>
    </message>
    <message>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>Explain trace</source>
        <translation>计算过程</translation>
    </message>
    <message>
        <source>Copy as text</source>
        <translation>复制为文本</translation>
    </message>
    <message>
        <source>sum of the rows below</source>
        <translation>下面各行之和</translation>
    </message>
    <message>
        <source>largest of the rows below</source>
        <translation>下面各行中的最大值</translation>
    </message>
    <message>
        <source>sum of {0} children</source>
        <translation>{0} 项之和</translation>
    </message>
    <message>
        <source>maximum of {0} children</source>
        <translation>{0} 项中的最大值</translation>
    </message>
</context>
<context>
    <name>Export</name>
    <message>
        <source>Export strategy</source>
        <translation>导出策略</translation>
    </message>
    <message>
        <source>The edited strategy changes {0} line(s) in {1} file(s): {2}. Writing keeps a copy of each file as FILE.bak.</source>
        <translation>编辑后的策略会修改 {1} 个文件中的 {0} 行：{2}。写入时会把每个文件的原件保存为 FILE.bak。</translation>
    </message>
    <message>
        <source>Changed on disk since it was opened (writing replaces those changes): {0}</source>
        <translation>打开后已在磁盘上被修改（写入将覆盖这些修改）：{0}</translation>
    </message>
    <message>
        <source>&amp;Write {0} file(s)</source>
        <translation>写入 {0} 个文件(&amp;W)</translation>
    </message>
    <message>
        <source>Save &amp;As…</source>
        <translation>另存为(&amp;A)…</translation>
    </message>
    <message>
        <source>(no change)</source>
        <translation>（无修改）</translation>
    </message>
    <message>
        <source>Nothing was written: {0}</source>
        <translation>未写入任何文件：{0}</translation>
    </message>
    <message>
        <source>Save edited config as</source>
        <translation>将编辑后的配置另存为</translation>
    </message>
    <message>
        <source>Save edited configs into folder</source>
        <translation>将编辑后的配置保存到文件夹</translation>
    </message>
    <message>
        <source>Not exported: the strategy breaks the estimator&apos;s rules. {0}</source>
        <translation>未导出：该策略违反估算器的规则。{0}</translation>
    </message>
    <message>
        <source>(Checked against the files&apos; own {0}: edits of those are not written by an export.)</source>
        <translation>（按文件自身的 {0} 检查：对这些部分的编辑不会被导出写入。）</translation>
    </message>
    <message>
        <source>Export is not available for this config: {0}</source>
        <translation>此配置无法导出：{0}</translation>
    </message>
    <message>
        <source>Export failed: internal error in the writer ({0})</source>
        <translation>导出失败：写入器内部错误（{0}）</translation>
    </message>
    <message>
        <source>Nothing to export: the strategy is the one in the file</source>
        <translation>无需导出：策略与文件中的一致</translation>
    </message>
    <message>
        <source>Wrote {0}</source>
        <translation>已写入 {0}</translation>
    </message>
    <message>
        <source>Unsaved edits</source>
        <translation>未保存的编辑</translation>
    </message>
    <message>
        <source>The strategy has edits that are not written to the config.</source>
        <translation>策略中有尚未写入配置文件的编辑。</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <source>Discard</source>
        <translation>放弃</translation>
    </message>
</context>
<context>
    <name>FeaturesForm</name>
    <message>
        <source>framework default</source>
        <translation>框架默认</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>none — bf16 matmuls</source>
        <translation>无 — bf16 矩阵乘</translation>
    </message>
    <message>
        <source>tensorwise — dynamic per-tensor scales</source>
        <translation>tensorwise — 逐张量动态缩放</translation>
    </message>
    <message>
        <source>delayed — amax history (Transformer Engine)</source>
        <translation>delayed — amax 历史(Transformer Engine)</translation>
    </message>
    <message>
        <source>rowwise — per-row scales (torchao)</source>
        <translation>rowwise — 逐行缩放(torchao)</translation>
    </message>
    <message>
        <source>blockwise — 128-element blocks</source>
        <translation>blockwise — 128 元素分块</translation>
    </message>
    <message>
        <source>mxfp8 — 32-element blocks (Blackwell)</source>
        <translation>mxfp8 — 32 元素分块(Blackwell)</translation>
    </message>
    <message>
        <source>off (eager)</source>
        <translation>关(eager)</translation>
    </message>
    <message>
        <source>the model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>the model and the loss</source>
        <translation>模型与损失</translation>
    </message>
    <message>
        <source>unfused</source>
        <translation>未融合</translation>
    </message>
    <message>
        <source>fused cross-entropy</source>
        <translation>融合交叉熵</translation>
    </message>
    <message>
        <source>chunked (no full logits)</source>
        <translation>分块(不生成完整 logits)</translation>
    </message>
    <message>
        <source>level0 — expert input and activation rebuilt</source>
        <translation>level0 — 专家输入与激活在反向重建</translation>
    </message>
    <message>
        <source>level1 — also the fc1 outputs rebuilt</source>
        <translation>level1 — fc1 输出也重建</translation>
    </message>
    <message>
        <source>LoRA</source>
        <translation>LoRA</translation>
    </message>
    <message>
        <source>QLoRA — 4-bit NF4 base</source>
        <translation>QLoRA — 4 位 NF4 基座</translation>
    </message>
    <message>
        <source>FP8 &amp;recipe</source>
        <translation>FP8 方案(&amp;R)</translation>
    </message>
    <message>
        <source>FP8 linear layers: what they save, their scales, and the device&apos;s FP8 peak in the step time (refused on a device without FP8)</source>
        <translation>FP8 线性层:其保存的张量、缩放因子,以及步时中设备的 FP8 峰值算力(不支持 FP8 的设备上拒绝)</translation>
    </message>
    <message>
        <source>FP8 weights</source>
        <translation>FP8 权重</translation>
    </message>
    <message>
        <source>in FP8</source>
        <translation>以 FP8 存放</translation>
    </message>
    <message>
        <source>torchtitan enable_fsdp_float8_all_gather, Megatron --fp8-param-gather</source>
        <translation>torchtitan enable_fsdp_float8_all_gather、Megatron --fp8-param-gather</translation>
    </message>
    <message>
        <source>FP8 experts</source>
        <translation>FP8 专家</translation>
    </message>
    <message>
        <source>the MoE experts&apos; matmuls in FP8 too</source>
        <translation>MoE 专家的矩阵乘也用 FP8</translation>
    </message>
    <message>
        <source>Amax history</source>
        <translation>Amax 历史长度</translation>
    </message>
    <message>
        <source>delayed scaling: amax values kept per FP8 tensor</source>
        <translation>延迟缩放:每个 FP8 张量保留的 amax 个数</translation>
    </message>
    <message>
        <source>torch.&amp;compile</source>
        <translation>torch.compile(&amp;C)</translation>
    </message>
    <message>
        <source>fused elementwise chains recompute their outputs instead of saving them; the compiled loss never holds fp32 logits</source>
        <translation>融合的逐元素链在反向时重算输出而不保存;编译后的损失不持有 fp32 logits</translation>
    </message>
    <message>
        <source>Loss kernel</source>
        <translation>损失算子</translation>
    </message>
    <message>
        <source>how the cross-entropy holds the logits</source>
        <translation>交叉熵如何持有 logits</translation>
    </message>
    <message>
        <source>&amp;Async TP</source>
        <translation>异步 TP(&amp;A)</translation>
    </message>
    <message>
        <source>overlapped</source>
        <translation>与计算重叠</translation>
    </message>
    <message>
        <source>TP communication overlapped with the matmuls: torchtitan enable_async_tensor_parallel, Megatron --tp-comm-overlap, MindSpeed MC2</source>
        <translation>TP 通信与矩阵乘重叠:torchtitan enable_async_tensor_parallel、Megatron --tp-comm-overlap、MindSpeed MC2</translation>
    </message>
    <message>
        <source>Overlap grad reduce</source>
        <translation>梯度规约重叠</translation>
    </message>
    <message>
        <source>DP gradient reduction bucket by bucket under the backward</source>
        <translation>DP 梯度规约按桶在反向中进行</translation>
    </message>
    <message>
        <source>Overlap param gather</source>
        <translation>参数聚合重叠</translation>
    </message>
    <message>
        <source>the distributed optimizer&apos;s parameter gather under the next forward</source>
        <translation>分布式优化器的参数聚合在下一次前向中进行</translation>
    </message>
    <message>
        <source>CP load balance</source>
        <translation>CP 负载均衡</translation>
    </message>
    <message>
        <source>causal masks: chunks reordered so every CP rank attends alike (off: the critical rank waits)</source>
        <translation>因果掩码:重排序列块使各 CP rank 注意力计算量相同(关:最忙的 rank 决定耗时)</translation>
    </message>
    <message>
        <source>&amp;Fine-tuning</source>
        <translation>微调(&amp;F)</translation>
    </message>
    <message>
        <source>frozen base weights carry no gradients and no optimizer states</source>
        <translation>冻结的基座权重没有梯度和优化器状态</translation>
    </message>
    <message>
        <source>LoRA rank</source>
        <translation>LoRA 秩</translation>
    </message>
    <message>
        <source>rank r of every adapter</source>
        <translation>每个适配器的秩 r</translation>
    </message>
    <message>
        <source>LoRA targets</source>
        <translation>LoRA 目标模块</translation>
    </message>
    <message>
        <source>e.g. q, k, v, o</source>
        <translation>例如 q, k, v, o</translation>
    </message>
    <message>
        <source>adapted modules: q k v qkv o gate up fc1 down (MLA: q_a q_b kv_a kv_b)</source>
        <translation>加适配器的模块:q k v qkv o gate up fc1 down(MLA:q_a q_b kv_a kv_b)</translation>
    </message>
    <message>
        <source>Double quantisation</source>
        <translation>双重量化</translation>
    </message>
    <message>
        <source>QLoRA&apos;s quantisation constants quantised again (NF4 base weights: 0.5 B per parameter plus the constants)</source>
        <translation>QLoRA 的量化常数再量化(NF4 基座权重:每参数 0.5 B 加常数)</translation>
    </message>
    <message>
        <source>Trainable layers</source>
        <translation>可训练层</translation>
    </message>
    <message>
        <source>every layer — e.g. -2, -1 for the last two</source>
        <translation>所有层——例如 -2, -1 表示最后两层</translation>
    </message>
    <message>
        <source>freeze fine-tuning: the layers whose weights train (model order, negative from the last; LLaMA-Factory freeze_trainable_layers); the others keep no gradients or optimizer states</source>
        <translation>冻结微调:权重参与训练的层(按模型顺序,负数从最后一层倒数;LLaMA-Factory freeze_trainable_layers);其余层不保留梯度和优化器状态</translation>
    </message>
    <message>
        <source>Trainable parts</source>
        <translation>可训练部分</translation>
    </message>
    <message>
        <source>all — e.g. {parts}</source>
        <translation>全部——例如 {parts}</translation>
    </message>
    <message>
        <source>the module groups of the trainable layers that train (LLaMA-Factory freeze_trainable_modules); empty: all</source>
        <translation>可训练层中参与训练的模块组(LLaMA-Factory freeze_trainable_modules);留空:全部</translation>
    </message>
    <message>
        <source>&amp;Offload activations</source>
        <translation>激活卸载(&amp;O)</translation>
    </message>
    <message>
        <source>module groups whose saved activations go to host memory (MindSpeed --swap-attention, MindFormers swap_config, Megatron activation offloading); copies over the host link</source>
        <translation>保存的激活换出到主机内存的模块组(MindSpeed --swap-attention、MindFormers swap_config、Megatron 激活卸载);经主机链路拷贝</translation>
    </message>
    <message>
        <source>Offload layers</source>
        <translation>卸载层</translation>
    </message>
    <message>
        <source>every layer — e.g. self_attention: 0, 1; mlp: 4</source>
        <translation>所有层——例如 self_attention: 0, 1; mlp: 4</translation>
    </message>
    <message>
        <source>per offload group, the model-order layers that offload it (MindFormers swap_config layers lists); a group not named offloads in every layer</source>
        <translation>每个卸载组对应的卸载层(按模型顺序;MindFormers swap_config 的 layers 列表);未列出的组在所有层卸载</translation>
    </message>
    <message>
        <source>MoE zero memory</source>
        <translation>MoE 零内存</translation>
    </message>
    <message>
        <source>MindSpeed --moe-zero-memory: the experts&apos; dispatched input and activation output freed after the forward, rebuilt in the backward (one more dispatch all-to-all)</source>
        <translation>MindSpeed --moe-zero-memory:专家的分发输入与激活输出在前向后释放,反向时重建(多一次分发 all-to-all)</translation>
    </message>
    <message>
        <source>MLA zero memory</source>
        <translation>MLA 零内存</translation>
    </message>
    <message>
        <source>recompute the attention</source>
        <translation>重计算注意力</translation>
    </message>
    <message>
        <source>MindSpeed-LLM --mla-zero-memory: an MLA attention keeps only its input; its internals and output are rebuilt in the backward</source>
        <translation>MindSpeed-LLM --mla-zero-memory:MLA 注意力只保留其输入;其内部张量和输出在反向时重建</translation>
    </message>
    <message>
        <source>Zero memory level1 layers</source>
        <translation>零内存 level1 层数</translation>
    </message>
    <message>
        <source>none — no adapters</source>
        <translation>无——不使用适配器</translation>
    </message>
    <message>
        <source>MindSpeed --moe-zero-memory-num-layers: level1 (which also frees the experts&apos; fc1 outputs) on that many layers of each stage, level0 on the others; empty: every layer</source>
        <translation>MindSpeed --moe-zero-memory-num-layers:每个阶段的这么多层用 level1(还会释放专家的 fc1 输出),其余层用 level0;留空:每一层</translation>
    </message>
    <message>
        <source>Offload optimizer</source>
        <translation>卸载优化器</translation>
    </message>
    <message>
        <source>on the host</source>
        <translation>在主机上</translation>
    </message>
    <message>
        <source>optimizer states and the step on the host: DeepSpeed offload_optimizer, FSDP2 CPUOffloadPolicy</source>
        <translation>优化器状态与更新步在主机上:DeepSpeed offload_optimizer、FSDP2 CPUOffloadPolicy</translation>
    </message>
    <message>
        <source>Offload parameters</source>
        <translation>卸载参数</translation>
    </message>
    <message>
        <source>parameters and gradients on the host, shards copied in before each gather (FSDP2 CPUOffloadPolicy, DeepSpeed offload_param)</source>
        <translation>参数与梯度在主机上,每次聚合前拷入分片(FSDP2 CPUOffloadPolicy、DeepSpeed offload_param)</translation>
    </message>
</context>
<context>
    <name>FileWatch</name>
    <message>
        <source>&amp;Reload</source>
        <translation>重新加载(&amp;R)</translation>
    </message>
    <message>
        <source>Ignore</source>
        <translation>忽略</translation>
    </message>
    <message>
        <source>{0} changed on disk.</source>
        <translation>{0} 已在磁盘上被修改。</translation>
    </message>
    <message>
        <source>Reload drops the strategy edits in the forms and the undo history.</source>
        <translation>重新加载将丢弃表单中的策略修改和撤销历史。</translation>
    </message>
    <message>
        <source>Read the files again; edits an export does not write (model, device, options) are carried over</source>
        <translation>重新读取文件；导出不会写入的修改（模型、设备、选项）会保留</translation>
    </message>
    <message>
        <source>Reload reads it again (the undo history starts again).</source>
        <translation>重新加载将再次读取该文件（撤销历史重新开始）。</translation>
    </message>
</context>
<context>
    <name>Fixes</name>
    <message>
        <source>{0} — peak {1} GiB, step {2} s</source>
        <translation>{0} — 峰值 {1} GiB，单步 {2} s</translation>
    </message>
    <message>
        <source>Nearest fixes…</source>
        <translation>最近的可行方案…</translation>
    </message>
    <message>
        <source>The nearest plans that fit on the same devices and global batch, fewest changed settings first (one click applies one)</source>
        <translation>在相同设备数与全局批大小下满足预算的最近方案，改动最少的在前（单击即可应用）</translation>
    </message>
    <message>
        <source>Looking for the nearest plans that fit…</source>
        <translation>正在查找满足预算的最近方案…</translation>
    </message>
    <message>
        <source>No fixes: {0}</source>
        <translation>没有可行方案：{0}</translation>
    </message>
    <message>
        <source>No plan of tensor × pipeline degree × recompute fits these devices and this global batch: more devices (or a smaller global batch) are needed.</source>
        <translation>在这些设备数与全局批大小下，张量并行 × 流水线并行 × 重计算的组合均无法满足预算：需要更多设备（或更小的全局批大小）。</translation>
    </message>
    <message>
        <source>{0} plans fit; choose one to apply it (undoable).</source>
        <translation>{0} 个方案满足预算；选择一个即可应用（可撤销）。</translation>
    </message>
    <message>
        <source>Apply fix: {0}</source>
        <translation>应用方案：{0}</translation>
    </message>
</context>
<context>
    <name>Forms</name>
    <message>
        <source>&amp;Parallel</source>
        <translation>并行(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Memory</source>
        <translation>显存(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Hardware</source>
        <translation>硬件(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;Features</source>
        <translation>特性(&amp;F)</translation>
    </message>
    <message>
        <source>Mo&amp;del</source>
        <translation>模型(&amp;D)</translation>
    </message>
    <message>
        <source>default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>e.g. 4 or 3, 4, 4, 0</source>
        <translation>例如 4 或 3, 4, 4, 0</translation>
    </message>
    <message>
        <source>default ({0})</source>
        <translation>默认（{0}）</translation>
    </message>
    <message>
        <source>Value from:</source>
        <translation>取值来源：</translation>
    </message>
</context>
<context>
    <name>HardwareForm</name>
    <message>
        <source>De&amp;vice</source>
        <translation>设备(&amp;V)</translation>
    </message>
    <message>
        <source>device preset: capacity, interconnect and rates</source>
        <translation>设备预设：容量、互联与算力/带宽</translation>
    </message>
    <message>
        <source>&amp;Capacity</source>
        <translation>容量(&amp;C)</translation>
    </message>
    <message>
        <source>device memory</source>
        <translation>设备显存</translation>
    </message>
    <message>
        <source>&amp;Reserve</source>
        <translation>预留(&amp;R)</translation>
    </message>
    <message>
        <source>fixed per-device reserve (runtime, allocator)</source>
        <translation>每卡固定预留（运行时、内存分配器）</translation>
    </message>
    <message>
        <source>&amp;Margin</source>
        <translation>安全余量(&amp;M)</translation>
    </message>
    <message>
        <source>safety margin taken off the budget</source>
        <translation>从预算中扣除的安全余量</translation>
    </message>
    <message>
        <source>Framework limit</source>
        <translation>框架显存上限</translation>
    </message>
    <message>
        <source>the framework&apos;s own memory limit (e.g. MindFormers max_device_memory)</source>
        <translation>框架自身的显存上限（例如 MindFormers 的 max_device_memory）</translation>
    </message>
    <message>
        <source>name, e.g. A2-62G</source>
        <translation>名称，例如 A2-62G</translation>
    </message>
    <message>
        <source>New preset name</source>
        <translation>新预设名称</translation>
    </message>
    <message>
        <source>Save &amp;preset</source>
        <translation>保存预设(&amp;P)</translation>
    </message>
    <message>
        <source>Save the current device and capacity as a user preset in {0}</source>
        <translation>将当前设备和容量保存为用户预设，位于 {0}</translation>
    </message>
    <message>
        <source>Budget:</source>
        <translation>预算：</translation>
    </message>
    <message>
        <source>Figures:</source>
        <translation>参数：</translation>
    </message>
    <message>
        <source>New preset:</source>
        <translation>新预设：</translation>
    </message>
    <message>
        <source>(user)</source>
        <translation>（用户）</translation>
    </message>
    <message>
        <source>HBM bandwidth</source>
        <translation>HBM 带宽</translation>
    </message>
    <message>
        <source>host link</source>
        <translation>主机链路</translation>
    </message>
    <message>
        <source>host RAM per node</source>
        <translation>每节点主机内存</translation>
    </message>
    <message>
        <source>matmul efficiency</source>
        <translation>矩阵乘效率</translation>
    </message>
    <message>
        <source>HBM efficiency</source>
        <translation>HBM 效率</translation>
    </message>
    <message>
        <source>peak {0}</source>
        <translation>{0} 峰值</translation>
    </message>
    <message>
        <source>{0} runtime context</source>
        <translation>{0} 运行时上下文</translation>
    </message>
    <message>
        <source>{0} library workspaces</source>
        <translation>{0} 库工作区</translation>
    </message>
    <message>
        <source>{0} (beyond)</source>
        <translation>{0}（更大范围）</translation>
    </message>
    <message>
        <source>{0} (up to {1} devices)</source>
        <translation>{0}（至多 {1} 个设备）</translation>
    </message>
    <message>
        <source>vendor document</source>
        <translation>厂商文档</translation>
    </message>
    <message>
        <source>public measurement</source>
        <translation>公开实测</translation>
    </message>
    <message>
        <source>derived</source>
        <translation>推算</translation>
    </message>
    <message>
        <source>calibrated</source>
        <translation>已校准</translation>
    </message>
    <message>
        <source>edited</source>
        <translation>已编辑</translation>
    </message>
    <message>
        <source>provisional</source>
        <translation>暂定</translation>
    </message>
    <message>
        <source>{0} per device</source>
        <translation>每设备 {0}</translation>
    </message>
    <message>
        <source>{0} (band {1}–{2})</source>
        <translation>{0}（区间 {1}–{2}）</translation>
    </message>
    <message>
        <source>{0} GiB of {1} GiB capacity</source>
        <translation>{0} GiB（容量 {1} GiB）</translation>
    </message>
    <message>
        <source>Type a name for the preset first.</source>
        <translation>请先输入预设名称。</translation>
    </message>
    <message>
        <source>Not saved: {0}</source>
        <translation>未保存：{0}</translation>
    </message>
    <message>
        <source>Saved {0}</source>
        <translation>已保存 {0}</translation>
    </message>
</context>
<context>
    <name>Help</name>
    <message>
        <source>Select the next / previous stage or category in a chart</source>
        <translation>在图表中选择下一个/上一个阶段或类别</translation>
    </message>
    <message>
        <source>Explain the selected bar segment</source>
        <translation>说明所选柱段的计算</translation>
    </message>
    <message>
        <source>Copy a table (tab-separated) or a chart (image)</source>
        <translation>复制表格（制表符分隔）或图表（图片）</translation>
    </message>
    <message>
        <source>Step a degree field to its next valid value</source>
        <translation>把并行度字段调到下一个有效值</translation>
    </message>
    <message>
        <source>SAPP Planner help</source>
        <translation>SAPP Planner 帮助</translation>
    </message>
    <message>
        <source>User guide</source>
        <translation>使用指南</translation>
    </message>
    <message>
        <source>Model and formulas</source>
        <translation>模型与公式（英文）</translation>
    </message>
    <message>
        <source>Fidelity</source>
        <translation>准确度（英文）</translation>
    </message>
    <message>
        <source>Keyboard shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <source>This page is in docs/{0} of the SAPP Planner sources; it is not in this installation.</source>
        <translation>此页面位于 SAPP Planner 源代码的 docs/{0}，本安装中没有包含。</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>操作</translation>
    </message>
    <message>
        <source>Keys</source>
        <translation>按键</translation>
    </message>
</context>
<context>
    <name>Keeper</name>
    <message>
        <source>Search space of the last session: {0}</source>
        <translation>上次会话的搜索空间：{0}</translation>
    </message>
    <message>
        <source>The pinned baseline of the last session is not restored: {0}</source>
        <translation>未恢复上次会话的固定基线：{0}</translation>
    </message>
    <message>
        <source>Pinned baseline of the last session restored (priced again)</source>
        <translation>已恢复上次会话的固定基线（已重新估算）</translation>
    </message>
    <message>
        <source>The compare set of the last session is not restored: {0}</source>
        <translation>未恢复上次会话的对比集：{0}</translation>
    </message>
    <message>
        <source>{0} compared strategies of the last session restored</source>
        <translation>已恢复上次会话的 {0} 个对比策略</translation>
    </message>
    <message>
        <source>not restored: {0}</source>
        <translation>未恢复：{0}</translation>
    </message>
</context>
<context>
    <name>LayerChart</name>
    <message>
        <source>Embedding</source>
        <translation>嵌入层</translation>
    </message>
    <message>
        <source>Output head</source>
        <translation>输出头</translation>
    </message>
    <message>
        <source>Embedding copy (MTP)</source>
        <translation>嵌入层副本（MTP）</translation>
    </message>
    <message>
        <source>Working overhead</source>
        <translation>工作开销</translation>
    </message>
    <message>
        <source>Communication buffers</source>
        <translation>通信缓冲区</translation>
    </message>
    <message>
        <source>Reserve</source>
        <translation>预留</translation>
    </message>
    <message>
        <source>Vision tower</source>
        <translation>视觉编码器</translation>
    </message>
    <message>
        <source>No-op layer</source>
        <translation>空操作层</translation>
    </message>
    <message>
        <source>Gradients (FSDP2, stage level)</source>
        <translation>梯度（FSDP2，阶段级）</translation>
    </message>
    <message>
        <source>Activations (FSDP2, stage level)</source>
        <translation>激活值（FSDP2，阶段级）</translation>
    </message>
    <message>
        <source>Library workspaces (allocated)</source>
        <translation>库工作区（已分配）</translation>
    </message>
    <message>
        <source>Caching allocator slack (reserved − allocated)</source>
        <translation>缓存分配器余量（已保留 − 已分配）</translation>
    </message>
    <message>
        <source>Runtime context (outside the allocator)</source>
        <translation>运行时上下文（分配器之外）</translation>
    </message>
    <message>
        <source>Communication library buffers</source>
        <translation>通信库缓冲</translation>
    </message>
    <message>
        <source>Async TP symmetric memory (outside the allocator)</source>
        <translation>异步 TP 对称内存（分配器之外）</translation>
    </message>
    <message>
        <source>TP overlap userbuffers (outside the allocator)</source>
        <translation>TP 重叠 userbuffers（分配器之外）</translation>
    </message>
    <message>
        <source>Dense layer {0}</source>
        <translation>稠密层 {0}</translation>
    </message>
    <message>
        <source>MoE layer {0}</source>
        <translation>MoE 层 {0}</translation>
    </message>
    <message>
        <source>MTP layer {0}</source>
        <translation>MTP 层 {0}</translation>
    </message>
    <message>
        <source>full recompute</source>
        <translation>完全重计算</translation>
    </message>
    <message>
        <source>selective recompute</source>
        <translation>选择性重计算</translation>
    </message>
    <message>
        <source>comm recompute</source>
        <translation>通信重计算</translation>
    </message>
    <message>
        <source>selective + comm recompute</source>
        <translation>选择性 + 通信重计算</translation>
    </message>
    <message>
        <source>Per layer</source>
        <translation>逐层</translation>
    </message>
    <message>
        <source>Stage {0}, per layer: {1} GiB in {2} rows</source>
        <translation>阶段 {0} 逐层：{1} GiB，共 {2} 行</translation>
    </message>
    <message>
        <source>peak point: {0}</source>
        <translation>峰值时刻：{0}</translation>
    </message>
    <message>
        <source>Layer  (emb = embedding, d/m = dense/MoE layer; recompute ·F full, ·S selective, ·C comm)</source>
        <translation>层（emb = 嵌入层，d/m = 稠密/MoE 层；重计算 ·F 完全，·S 选择性，·C 通信）</translation>
    </message>
    <message>
        <source>Layer  (d/m = dense/MoE; recompute ·F full, ·S selective, ·C comm)</source>
        <translation>层（d/m = 稠密/MoE；重计算 ·F 完全、·S 选择性、·C 通信）</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>, chunk {0}</source>
        <translation>，块 {0}</translation>
    </message>
    <message>
        <source>activations of {0} micro-batch(es) in flight</source>
        <translation>{0} 个在途微批次的激活值</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
    <message>
        <source>Explain</source>
        <translation>计算说明</translation>
    </message>
    <message>
        <source>Warnings &amp;&amp; assumptions</source>
        <translation>警告与假设</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>The chart still shows the last valid estimate, greyed: it is not of this plan.</source>
        <translation>图表仍显示上一次有效的估算（已置灰）：它不是此计划的结果。</translation>
    </message>
    <message>
        <source>Open config(s)</source>
        <translation>打开配置文件</translation>
    </message>
    <message>
        <source>Configs (*.yaml *.yml *.json *.toml *.sh);;All files (*)</source>
        <translation>配置文件 (*.yaml *.yml *.json *.toml *.sh);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Reading {0}…</source>
        <translation>正在读取 {0}…</translation>
    </message>
    <message>
        <source>Opening cancelled</source>
        <translation>已取消打开</translation>
    </message>
    <message>
        <source>Cannot open {0}: {1}</source>
        <translation>无法打开 {0}：{1}</translation>
    </message>
    <message>
        <source>Cannot open {0}: internal error in the reader ({1})</source>
        <translation>无法打开 {0}：读取器内部错误（{1}）</translation>
    </message>
    <message>
        <source>Opened {0}</source>
        <translation>已打开 {0}</translation>
    </message>
    <message>
        <source>No longer there: {0} (removed from the recent list)</source>
        <translation>文件已不存在：{0}（已从最近列表中移除）</translation>
    </message>
    <message>
        <source>Not applied: {0}</source>
        <translation>未应用：{0}</translation>
    </message>
    <message>
        <source>Reloading {0} from disk…</source>
        <translation>正在从磁盘重新加载 {0}…</translation>
    </message>
    <message>
        <source>Reset to file</source>
        <translation>重置为文件中的值</translation>
    </message>
    <message>
        <source>Device → {0}</source>
        <translation>设备 → {0}</translation>
    </message>
    <message>
        <source>internal error: {0}</source>
        <translation>内部错误：{0}</translation>
    </message>
    <message>
        <source>This combination cannot be priced.</source>
        <translation>无法估算这一组合。</translation>
    </message>
    <message>
        <source>{0} stays open.</source>
        <translation>{0} 仍保持打开。</translation>
    </message>
    <message>
        <source>estimate failed</source>
        <translation>估算失败</translation>
    </message>
    <message>
        <source>estimate {0} ms</source>
        <translation>估算 {0} ms</translation>
    </message>
    <message>
        <source>Nothing to pin: the numbers on screen are not of the plan in the forms</source>
        <translation>无法固定：屏幕上的数字不是表单中计划的结果</translation>
    </message>
    <message>
        <source>Pinned: peak {0} GiB; later estimates are drawn beside it</source>
        <translation>已固定：峰值 {0} GiB；之后的估算会并排绘制</translation>
    </message>
    <message>
        <source>About SAPP Planner</source>
        <translation>关于 SAPP Planner</translation>
    </message>
    <message>
        <source>Per-stage memory, step time and strategy search for LLM training plans on NPU/GPU clusters.</source>
        <translation>面向 NPU/GPU 集群大模型训练计划的逐阶段显存、单步时间估算与策略搜索。</translation>
    </message>
    <message>
        <source>Side &amp;panels</source>
        <translation>侧边面板(&amp;P)</translation>
    </message>
    <message>
        <source>Show or collapse the Strategy, Explain and Warnings panels (more room for the charts on a small screen)</source>
        <translation>显示或收起策略、说明与警告面板（小屏幕上给图表留出更多空间）</translation>
    </message>
</context>
<context>
    <name>MemoryForm</name>
    <message>
        <source>framework default</source>
        <translation>框架默认</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>none — no sharding</source>
        <translation>none — 不切分</translation>
    </message>
    <message>
        <source>zero1 — optimizer states sharded</source>
        <translation>zero1 — 切分优化器状态</translation>
    </message>
    <message>
        <source>zero2 — + gradients</source>
        <translation>zero2 — 再切分梯度</translation>
    </message>
    <message>
        <source>zero3 — + parameters</source>
        <translation>zero3 — 再切分参数</translation>
    </message>
    <message>
        <source>fsdp — PyTorch FSDP2</source>
        <translation>fsdp — PyTorch FSDP2</translation>
    </message>
    <message>
        <source>hsdp — hybrid sharded DP</source>
        <translation>hsdp — 混合分片数据并行</translation>
    </message>
    <message>
        <source>mf_op — MindSpore parallel optimizer</source>
        <translation>mf_op — MindSpore 优化器并行</translation>
    </message>
    <message>
        <source>none</source>
        <translation>不重计算</translation>
    </message>
    <message>
        <source>selective</source>
        <translation>选择性</translation>
    </message>
    <message>
        <source>full</source>
        <translation>完全</translation>
    </message>
    <message>
        <source>&amp;Sharding</source>
        <translation>分片(&amp;S)</translation>
    </message>
    <message>
        <source>how optimizer states, gradients and parameters are sharded over DP</source>
        <translation>优化器状态、梯度和参数如何在数据并行维度上分片</translation>
    </message>
    <message>
        <source>Shard size</source>
        <translation>分片组大小</translation>
    </message>
    <message>
        <source>ranks one optimizer shard spans; default = the whole sharding domain</source>
        <translation>一个优化器分片组跨越的卡数；默认 = 整个分片域</translation>
    </message>
    <message>
        <source>&amp;Recompute</source>
        <translation>重计算(&amp;R)</translation>
    </message>
    <message>
        <source>default recompute mode of every layer</source>
        <translation>每一层默认的重计算方式</translation>
    </message>
    <message>
        <source>Full-recompute layers</source>
        <translation>完全重计算层数</translation>
    </message>
    <message>
        <source>layers per stage that recompute fully: one number for every stage or a list with one per stage</source>
        <translation>每个阶段完全重计算的层数：一个数（所有阶段相同）或每阶段一个数的列表</translation>
    </message>
    <message>
        <source>Selective layers</source>
        <translation>选择性重计算层数</translation>
    </message>
    <message>
        <source>layers per stage with selective recompute (one number or one per stage)</source>
        <translation>每个阶段选择性重计算的层数（一个数或每阶段一个）</translation>
    </message>
    <message>
        <source>Parameter bytes</source>
        <translation>参数字节数</translation>
    </message>
    <message>
        <source>bytes per stored parameter</source>
        <translation>每个存储参数的字节数</translation>
    </message>
    <message>
        <source>Compute bytes</source>
        <translation>计算字节数</translation>
    </message>
    <message>
        <source>bytes per activation element in compute</source>
        <translation>计算中每个激活元素的字节数</translation>
    </message>
    <message>
        <source>Gradient bytes</source>
        <translation>梯度字节数</translation>
    </message>
    <message>
        <source>bytes per gradient element</source>
        <translation>每个梯度元素的字节数</translation>
    </message>
    <message>
        <source>Optimizer state bytes</source>
        <translation>优化器状态字节数</translation>
    </message>
    <message>
        <source>bytes per optimizer state element</source>
        <translation>每个优化器状态元素的字节数</translation>
    </message>
    <message>
        <source>Flash attention</source>
        <translation>Flash Attention</translation>
    </message>
    <message>
        <source>flash attention keeps no s×s score matrix</source>
        <translation>Flash Attention 不保存 s×s 的注意力分数矩阵</translation>
    </message>
    <message>
        <source>to host memory</source>
        <translation>换出到主机内存</translation>
    </message>
    <message>
        <source>Swap</source>
        <translation>换出</translation>
    </message>
    <message>
        <source>optimizer states live on the host and are swapped in for the step</source>
        <translation>优化器状态放在主机内存，优化器步时再换入</translation>
    </message>
    <message>
        <source>Swap slices</source>
        <translation>换入分片数</translation>
    </message>
    <message>
        <source>the optimizer step swaps states in this many slices</source>
        <translation>优化器步分这么多片换入状态</translation>
    </message>
</context>
<context>
    <name>Menus</name>
    <message>
        <source>&amp;Redo {0}</source>
        <translation>重做 {0}(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Redo</source>
        <translation>重做(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Undo {0}</source>
        <translation>撤销 {0}(&amp;U)</translation>
    </message>
    <message>
        <source>&amp;Undo</source>
        <translation>撤销(&amp;U)</translation>
    </message>
    <message>
        <source>&amp;Open…</source>
        <translation>打开(&amp;O)…</translation>
    </message>
    <message>
        <source>Open a config (or several files that make one plan)</source>
        <translation>打开配置文件（或组成同一计划的多个文件）</translation>
    </message>
    <message>
        <source>&amp;Export strategy…</source>
        <translation>导出策略(&amp;E)…</translation>
    </message>
    <message>
        <source>Write the edited strategy back into the config, after showing the diff</source>
        <translation>先显示差异，再把编辑后的策略写回配置文件</translation>
    </message>
    <message>
        <source>Save strategy &amp;As…</source>
        <translation>策略另存为(&amp;A)…</translation>
    </message>
    <message>
        <source>Write the edited config under another name</source>
        <translation>以另一个文件名保存编辑后的配置</translation>
    </message>
    <message>
        <source>Export &amp;report…</source>
        <translation>导出报告(&amp;R)…</translation>
    </message>
    <message>
        <source>A shareable HTML or Markdown report: summary, per-stage table, charts, assumptions</source>
        <translation>可分享的 HTML 或 Markdown 报告：概要、逐阶段表格、图表与假设</translation>
    </message>
    <message>
        <source>&amp;Close config</source>
        <translation>关闭配置(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>Re&amp;set to file</source>
        <translation>重置为文件中的值(&amp;S)</translation>
    </message>
    <message>
        <source>Drop every edit (undoable)</source>
        <translation>放弃所有编辑（可撤销）</translation>
    </message>
    <message>
        <source>&amp;Pin baseline</source>
        <translation>固定基线(&amp;P)</translation>
    </message>
    <message>
        <source>Keep the current bars and draw later estimates beside them</source>
        <translation>保留当前柱形，之后的估算并排绘制</translation>
    </message>
    <message>
        <source>Clear pinned baseline</source>
        <translation>清除固定基线</translation>
    </message>
    <message>
        <source>&amp;Memory per stage</source>
        <translation>各阶段显存(&amp;M)</translation>
    </message>
    <message>
        <source>&amp;Search strategies</source>
        <translation>策略搜索(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Compare strategies</source>
        <translation>策略对比(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Balance pipeline</source>
        <translation>均衡流水线(&amp;B)</translation>
    </message>
    <message>
        <source>Sc&amp;hedule timeline</source>
        <translation>调度时间线(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;Run search</source>
        <translation>运行搜索(&amp;R)</translation>
    </message>
    <message>
        <source>Search the strategy space set in the Search tab</source>
        <translation>搜索“搜索”页中设定的策略空间</translation>
    </message>
    <message>
        <source>Run &amp;balancer</source>
        <translation>运行均衡(&amp;B)</translation>
    </message>
    <message>
        <source>Choose layers and recompute per stage for the current strategy</source>
        <translation>为当前策略选择每个阶段的层数与重计算</translation>
    </message>
    <message>
        <source>&amp;Add current strategy to compare</source>
        <translation>将当前策略加入对比(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;Calibrate from log…</source>
        <translation>从日志校准(&amp;C)…</translation>
    </message>
    <message>
        <source>Fit the device-level memory and the matmul efficiency from the logs of a run of this plan (or drop the logs on the window)</source>
        <translation>根据此计划一次运行的日志拟合设备级显存和矩阵乘效率（也可以把日志拖到窗口上）</translation>
    </message>
    <message>
        <source>Focus &amp;forms</source>
        <translation>聚焦表单(&amp;F)</translation>
    </message>
    <message>
        <source>Focus stage &amp;chart</source>
        <translation>聚焦阶段图(&amp;C)</translation>
    </message>
    <message>
        <source>Focus &amp;layer chart</source>
        <translation>聚焦逐层图(&amp;L)</translation>
    </message>
    <message>
        <source>Focus &amp;explain</source>
        <translation>聚焦计算说明(&amp;E)</translation>
    </message>
    <message>
        <source>Reset &amp;layout</source>
        <translation>重置布局(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;User guide</source>
        <translation>使用指南(&amp;U)</translation>
    </message>
    <message>
        <source>What each number means, the model&apos;s formulas and its measured fidelity</source>
        <translation>每个数值的含义、模型公式及其实测准确度</translation>
    </message>
    <message>
        <source>&amp;Keyboard shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <source>&amp;About SAPP Planner</source>
        <translation>关于 SAPP Planner(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>Open E&amp;xample</source>
        <translation>打开示例(&amp;X)</translation>
    </message>
    <message>
        <source>Export &amp;chart</source>
        <translation>导出图表(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;Analysis</source>
        <translation>分析(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;Hardware</source>
        <translation>硬件(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <source>Clear list</source>
        <translation>清空列表</translation>
    </message>
    <message>
        <source>As PNG…</source>
        <translation>PNG 格式…</translation>
    </message>
    <message>
        <source>As SVG…</source>
        <translation>SVG 格式…</translation>
    </message>
    <message>
        <source>Numbers as CSV…</source>
        <translation>数据（CSV）…</translation>
    </message>
    <message>
        <source>Search table as CSV…</source>
        <translation>搜索结果表（CSV）…</translation>
    </message>
    <message>
        <source>Search result as JSON…</source>
        <translation>搜索结果（JSON）…</translation>
    </message>
</context>
<context>
    <name>ModelForm</name>
    <message>
        <source>Hidden size</source>
        <translation>隐藏层维度</translation>
    </message>
    <message>
        <source>Layers</source>
        <translation>层数</translation>
    </message>
    <message>
        <source>Attention heads</source>
        <translation>注意力头数</translation>
    </message>
    <message>
        <source>KV heads</source>
        <translation>KV 头数</translation>
    </message>
    <message>
        <source>Head dim</source>
        <translation>头维度</translation>
    </message>
    <message>
        <source>FFN hidden size</source>
        <translation>FFN 隐藏层维度</translation>
    </message>
    <message>
        <source>Vocabulary</source>
        <translation>词表大小</translation>
    </message>
    <message>
        <source>Experts</source>
        <translation>专家数</translation>
    </message>
    <message>
        <source>Experts per token</source>
        <translation>每个 token 的专家数</translation>
    </message>
    <message>
        <source>Shared experts</source>
        <translation>共享专家数</translation>
    </message>
    <message>
        <source>Expert FFN size</source>
        <translation>专家 FFN 维度</translation>
    </message>
    <message>
        <source>Leading dense layers</source>
        <translation>前置稠密层数</translation>
    </message>
    <message>
        <source>MTP layers</source>
        <translation>MTP 层数</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>model name</source>
        <translation>模型名称</translation>
    </message>
    <message>
        <source>tied</source>
        <translation>共享</translation>
    </message>
    <message>
        <source>Tied embeddings</source>
        <translation>嵌入层与输出层共享权重</translation>
    </message>
    <message>
        <source>&amp;Edit model</source>
        <translation>编辑模型(&amp;E)</translation>
    </message>
    <message>
        <source>Model dimensions come from the file; turn this on to try other ones.</source>
        <translation>模型结构参数来自文件；勾选后可尝试其他取值。</translation>
    </message>
</context>
<context>
    <name>Notes</name>
    <message>
        <source>Warnings and assumptions</source>
        <translation>警告与假设</translation>
    </message>
    <message>
        <source>Errors</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Adapted by the last edit</source>
        <translation>上一次编辑自动调整的内容</translation>
    </message>
    <message>
        <source>Warnings</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>Assumptions (defaults the estimator filled in)</source>
        <translation>假设（估算器填入的默认值）</translation>
    </message>
    <message>
        <source>No warnings; every value comes from the files.</source>
        <translation>没有警告；所有取值均来自文件。</translation>
    </message>
</context>
<context>
    <name>Panel</name>
    <message>
        <source>{0} · seq {1} · global batch {2} · {3} × {4}</source>
        <translation>{0} · 序列长度 {1} · 全局批大小 {2} · {3} × {4}</translation>
    </message>
    <message>
        <source>seq</source>
        <translation>序列长度</translation>
    </message>
    <message>
        <source>global batch</source>
        <translation>全局批大小</translation>
    </message>
    <message>
        <source>devices</source>
        <translation>设备数</translation>
    </message>
</context>
<context>
    <name>ParallelForm</name>
    <message>
        <source>&amp;DP</source>
        <translation>&amp;DP</translation>
    </message>
    <message>
        <source>data-parallel degree; editing it changes the device count and re-derives the micro-batch count (global batch fixed)</source>
        <translation>数据并行度；修改它会改变设备数，并重新推导微批次数（全局批大小不变）</translation>
    </message>
    <message>
        <source>&amp;TP</source>
        <translation>&amp;TP</translation>
    </message>
    <message>
        <source>tensor-parallel degree</source>
        <translation>张量并行度</translation>
    </message>
    <message>
        <source>&amp;PP</source>
        <translation>&amp;PP</translation>
    </message>
    <message>
        <source>pipeline stages; per-stage lists written for the old depth are refitted</source>
        <translation>流水线阶段数；按旧阶段数写的逐阶段列表会被重新适配</translation>
    </message>
    <message>
        <source>&amp;VPP</source>
        <translation>&amp;VPP</translation>
    </message>
    <message>
        <source>virtual pipeline chunks per stage (interleaved schedule)</source>
        <translation>每个阶段的虚拟流水线块数（交错调度）</translation>
    </message>
    <message>
        <source>&amp;CP</source>
        <translation>&amp;CP</translation>
    </message>
    <message>
        <source>context-parallel degree</source>
        <translation>上下文并行度</translation>
    </message>
    <message>
        <source>CP algorithm</source>
        <translation>CP 算法</translation>
    </message>
    <message>
        <source>ring, ulysses or hybrid</source>
        <translation>ring、ulysses 或 hybrid</translation>
    </message>
    <message>
        <source>&amp;EP</source>
        <translation>&amp;EP</translation>
    </message>
    <message>
        <source>expert-parallel degree (MoE)</source>
        <translation>专家并行度（MoE）</translation>
    </message>
    <message>
        <source>ETP</source>
        <translation>ETP</translation>
    </message>
    <message>
        <source>expert tensor-parallel degree; default = the framework&apos;s rule</source>
        <translation>专家张量并行度；默认按框架规则</translation>
    </message>
    <message>
        <source>sequence parallel</source>
        <translation>序列并行</translation>
    </message>
    <message>
        <source>SP</source>
        <translation>SP</translation>
    </message>
    <message>
        <source>sequence parallelism with TP</source>
        <translation>与张量并行配合的序列并行</translation>
    </message>
    <message>
        <source>&amp;Micro-batch size</source>
        <translation>微批次大小(&amp;M)</translation>
    </message>
    <message>
        <source>sequences per micro-batch; the micro-batch count follows (global batch fixed)</source>
        <translation>每个微批次的序列数；微批次数随之变化（全局批大小不变）</translation>
    </message>
    <message>
        <source>Micro-&amp;batches</source>
        <translation>微批次数(&amp;B)</translation>
    </message>
    <message>
        <source>micro-batches per step and pipeline; editing it changes the global batch</source>
        <translation>每步每条流水线的微批次数；修改它会改变全局批大小</translation>
    </message>
    <message>
        <source>Sequence length</source>
        <translation>序列长度</translation>
    </message>
    <message>
        <source>tokens per sequence</source>
        <translation>每条序列的 token 数</translation>
    </message>
    <message>
        <source>default (1F1B / interleaved)</source>
        <translation>默认（1F1B / 交错）</translation>
    </message>
    <message>
        <source>Schedule</source>
        <translation>调度</translation>
    </message>
    <message>
        <source>pipeline schedule</source>
        <translation>流水线调度</translation>
    </message>
    <message>
        <source>&amp;device count</source>
        <translation>设备数(&amp;D)</translation>
    </message>
    <message>
        <source>D&amp;P</source>
        <translation>D&amp;P</translation>
    </message>
    <message>
        <source>Editing TP, PP or CP re-derives DP so that the device count stays fixed (the global batch stays fixed too: micro-batches follow DP).</source>
        <translation>修改 TP、PP 或 CP 时重新推导 DP，使设备数保持不变（全局批大小也不变：微批次数随 DP 变化）。</translation>
    </message>
    <message>
        <source>Editing TP, PP or CP keeps DP; the device count follows.</source>
        <translation>修改 TP、PP 或 CP 时保持 DP 不变；设备数随之变化。</translation>
    </message>
    <message>
        <source>Hold fixed:</source>
        <translation>保持不变：</translation>
    </message>
    <message>
        <source>Devices:</source>
        <translation>设备数：</translation>
    </message>
    <message>
        <source>Global batch:</source>
        <translation>全局批大小：</translation>
    </message>
    <message>
        <source>changed</source>
        <translation>已变化</translation>
    </message>
    <message>
        <source>derived; was {0} in the file</source>
        <translation>推导值；文件中为 {0}</translation>
    </message>
</context>
<context>
    <name>Pareto</name>
    <message>
        <source>Step time vs peak memory</source>
        <translation>单步时间与峰值显存</translation>
    </message>
    <message>
        <source>Step time (s)</source>
        <translation>单步时间 (s)</translation>
    </message>
    <message>
        <source>Peak memory per device (GiB)</source>
        <translation>每卡峰值显存 (GiB)</translation>
    </message>
    <message>
        <source>budget {0} GiB</source>
        <translation>预算 {0} GiB</translation>
    </message>
</context>
<context>
    <name>Report</name>
    <message>
        <source>HTML report (*.html)</source>
        <translation>HTML 报告 (*.html)</translation>
    </message>
    <message>
        <source>Markdown report with SVG chart (*.md)</source>
        <translation>Markdown 报告，附 SVG 图表 (*.md)</translation>
    </message>
    <message>
        <source>Export report</source>
        <translation>导出报告</translation>
    </message>
</context>
<context>
    <name>Schedule</name>
    <message>
        <source>Time within one pipeline flush (s)</source>
        <translation>一轮流水线内的时间 (s)</translation>
    </message>
    <message>
        <source>Pipeline schedule</source>
        <translation>流水线调度</translation>
    </message>
    <message>
        <source>stage {0}</source>
        <translation>阶段 {0}</translation>
    </message>
    <message>
        <source>{0} schedule: {1} stages, {2} micro-batches, one flush {3} s</source>
        <translation>{0} 调度：{1} 个阶段，{2} 个微批次，一轮流水线 {3} s</translation>
    </message>
    <message>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <source>recompute</source>
        <translation>重计算</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <source>weight gradients</source>
        <translation>权重梯度</translation>
    </message>
    <message>
        <source>Stage {0}: {1} of micro-batch {2}, chunk {3}</source>
        <translation>阶段 {0}：微批次 {2} 的{1}，块 {3}</translation>
    </message>
    <message>
        <source>{0} – {1} s ({2} ms)</source>
        <translation>{0} – {1} s（{2} ms）</translation>
    </message>
    <message>
        <source>after it: {0} micro-batch(es) in flight {1}, memory {2} GiB</source>
        <translation>之后：在途微批次 {0} 个 {1}，显存 {2} GiB</translation>
    </message>
    <message>
        <source>the stage&apos;s peak instant</source>
        <translation>该阶段的峰值时刻</translation>
    </message>
    <message>
        <source>activation memory, per-stage scale</source>
        <translation>激活值显存（各阶段独立缩放）</translation>
    </message>
    <message>
        <source>peak instant</source>
        <translation>峰值时刻</translation>
    </message>
    <message>
        <source>Numbers on blocks are micro-batches; darker blocks are later chunks. Scroll the wheel over the chart to zoom in time.</source>
        <translation>块上的数字是微批次编号；颜色较深的块属于后面的块（chunk）。在图上滚动鼠标滚轮可缩放时间轴。</translation>
    </message>
    <message>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <source>Peak at (s)</source>
        <translation>峰值时刻 (s)</translation>
    </message>
    <message>
        <source>In flight</source>
        <translation>最多在途</translation>
    </message>
    <message>
        <source>Peak GiB</source>
        <translation>峰值 GiB</translation>
    </message>
    <message>
        <source>Activations GiB</source>
        <translation>激活值 GiB</translation>
    </message>
    <message>
        <source>Stage total GiB</source>
        <translation>阶段总量 GiB</translation>
    </message>
    <message>
        <source>the most micro-batches in flight at once (the estimator&apos;s in-flight profile)</source>
        <translation>同时在途的最多微批次数（即估算器的在途曲线）</translation>
    </message>
    <message>
        <source>parameters, gradients, optimizer states and activations at the peak instant</source>
        <translation>峰值时刻的参数、梯度、优化器状态和激活值</translation>
    </message>
    <message>
        <source>the stage&apos;s bar in the Memory tab: adds communication buffers, working memory and the reserve</source>
        <translation>“显存”页中该阶段的柱形：另外计入通信缓冲、工作内存和预留</translation>
    </message>
    <message>
        <source>Step-time part</source>
        <translation>单步时间组成</translation>
    </message>
    <message>
        <source>Seconds</source>
        <translation>秒</translation>
    </message>
    <message>
        <source>Share</source>
        <translation>占比</translation>
    </message>
    <message>
        <source>Open a config to see its pipeline schedule.</source>
        <translation>打开一个配置文件以查看其流水线调度。</translation>
    </message>
    <message>
        <source>Simulating the schedule…</source>
        <translation>正在模拟调度…</translation>
    </message>
    <message>
        <source>No timeline for this plan: {0}</source>
        <translation>此计划无法生成时间线：{0}</translation>
    </message>
    <message>
        <source>step time</source>
        <translation>单步时间</translation>
    </message>
</context>
<context>
    <name>SearchPanel</name>
    <message>
        <source>enumerating candidates</source>
        <translation>枚举候选策略</translation>
    </message>
    <message>
        <source>checking the rules</source>
        <translation>检查约束规则</translation>
    </message>
    <message>
        <source>pricing survivors</source>
        <translation>估算剩余候选</translation>
    </message>
    <message>
        <source>ranking</source>
        <translation>排序</translation>
    </message>
    <message>
        <source>The plan as opened cannot be estimated, so it is not among the rows.</source>
        <translation>打开的计划无法估算，因此不在列表中。</translation>
    </message>
    <message>
        <source>The plan as opened (*) does not fit: peak {0} GiB.</source>
        <translation>打开的计划（*）超出预算：峰值 {0} GiB。</translation>
    </message>
    <message>
        <source>The plan as opened (*) does not fit the node&apos;s host RAM: {0} GiB per node of {1} GiB.</source>
        <translation>打开的计划（*）超出节点主机内存：每节点 {0} GiB，内存 {1} GiB。</translation>
    </message>
    <message>
        <source>The plan as opened (*) ranks {0} of {1}: step {2}, peak {3} GiB.</source>
        <translation>打开的计划（*）排第 {0} / {1}：单步 {2}，峰值 {3} GiB。</translation>
    </message>
    <message>
        <source>Search space (device count and global batch fixed)</source>
        <translation>搜索空间（设备数与全局批大小固定）</translation>
    </message>
    <message>
        <source>&amp;Run search</source>
        <translation>运行搜索(&amp;R)</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>&amp;Filter:</source>
        <translation>筛选(&amp;F)：</translation>
    </message>
    <message>
        <source>e.g. tp&gt;=4 pp=8 rec=full mfu&gt;30, or any text</source>
        <translation>例如 tp&gt;=4 pp=8 rec=full mfu&gt;30，或任意文字</translation>
    </message>
    <message>
        <source>Pareto front only</source>
        <translation>仅帕累托前沿</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Table as CSV…</source>
        <translation>表格（CSV）…</translation>
    </message>
    <message>
        <source>Result as JSON…</source>
        <translation>结果（JSON）…</translation>
    </message>
    <message>
        <source>Same in every row: {0}</source>
        <translation>每行相同：{0}</translation>
    </message>
    <message>
        <source>Strategies that fit</source>
        <translation>满足预算的策略</translation>
    </message>
    <message>
        <source>Refused</source>
        <translation>已排除</translation>
    </message>
    <message>
        <source>Fastest {0} of {1} that fit</source>
        <translation>满足预算的 {1} 个中最快的 {0} 个</translation>
    </message>
    <message>
        <source>Rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>Candidates</source>
        <translation>候选数</translation>
    </message>
    <message>
        <source>Example</source>
        <translation>示例</translation>
    </message>
    <message>
        <source>&amp;Apply to forms</source>
        <translation>应用到表单(&amp;A)</translation>
    </message>
    <message>
        <source>Put the selected strategy into the forms (one undoable edit)</source>
        <translation>把选中的策略填入表单（一次可撤销的编辑）</translation>
    </message>
    <message>
        <source>Add to co&amp;mpare</source>
        <translation>加入对比(&amp;M)</translation>
    </message>
    <message>
        <source>Show search space ▾</source>
        <translation>显示搜索空间 ▾</translation>
    </message>
    <message>
        <source>Hide search space ▴</source>
        <translation>隐藏搜索空间 ▴</translation>
    </message>
    <message>
        <source>Choose what to vary, then Run search.</source>
        <translation>选择要变化的维度，然后运行搜索。</translation>
    </message>
    <message>
        <source>Not started: {0}</source>
        <translation>未开始：{0}</translation>
    </message>
    <message>
        <source>Searching {0} on {1} devices, global batch {2}…</source>
        <translation>正在搜索 {0}，设备数 {1}，全局批大小 {2}…</translation>
    </message>
    <message>
        <source>cancelling…</source>
        <translation>正在取消…</translation>
    </message>
    <message>
        <source>%v of %m priced</source>
        <translation>已估算 %v / %m</translation>
    </message>
    <message>
        <source>The search failed: {0}</source>
        <translation>搜索失败：{0}</translation>
    </message>
    <message>
        <source>{0} candidates, {1} refused by the rules, {2} priced, {3} fit the {4} GiB budget ({5} s).</source>
        <translation>共 {0} 个候选，{1} 个被规则排除，估算 {2} 个，{3} 个在 {4} GiB 预算内（用时 {5} s）。</translation>
    </message>
    <message>
        <source>Cancelled after {0} of {1} priced: partial result.</source>
        <translation>已在估算 {0} / {1} 个后取消：部分结果。</translation>
    </message>
    <message>
        <source>Only the candidates priced before Cancel are ranked.</source>
        <translation>只对取消前已估算的候选进行排序。</translation>
    </message>
    <message>
        <source>The new search was cancelled after {0} of {1} priced;</source>
        <translation>新的搜索已在估算 {0} / {1} 个后取消；</translation>
    </message>
    <message>
        <source>the previous complete search is still shown.</source>
        <translation>仍显示上一次完整的搜索结果。</translation>
    </message>
    <message>
        <source>(The plan changed since this search ran.)</source>
        <translation>（搜索之后计划已有改动。）</translation>
    </message>
    <message>
        <source>Refused ({0})</source>
        <translation>已排除（{0}）</translation>
    </message>
    <message>
        <source>{0} of {1} shown</source>
        <translation>显示 {0} / {1}</translation>
    </message>
    <message>
        <source>Estimating the selected strategy…</source>
        <translation>正在估算选中的策略…</translation>
    </message>
    <message>
        <source>Cannot estimate it: {0}</source>
        <translation>无法估算：{0}</translation>
    </message>
    <message>
        <source>{0}: dp {1} × tp {2} × pp {3}, step {4}</source>
        <translation>{0}：dp {1} × tp {2} × pp {3}，单步 {4}</translation>
    </message>
    <message>
        <source>Search #{0}</source>
        <translation>搜索第 {0} 名</translation>
    </message>
    <message>
        <source>Search Pareto point</source>
        <translation>搜索帕累托点</translation>
    </message>
    <message>
        <source>Apply {0}</source>
        <translation>应用{0}</translation>
    </message>
    <message>
        <source>CSV table (*.csv)</source>
        <translation>CSV 表格 (*.csv)</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON (*.json)</translation>
    </message>
    <message>
        <source>Export the search result</source>
        <translation>导出搜索结果</translation>
    </message>
    <message>
        <source>Wrote {0}</source>
        <translation>已写入 {0}</translation>
    </message>
</context>
<context>
    <name>SearchSpace</name>
    <message>
        <source>Rec</source>
        <translation>重计算</translation>
    </message>
    <message>
        <source>fixed</source>
        <translation>固定</translation>
    </message>
    <message>
        <source>list</source>
        <translation>列表</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>derived</source>
        <translation>推导</translation>
    </message>
    <message>
        <source>default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>per-stage</source>
        <translation>逐阶段</translation>
    </message>
    <message>
        <source>none,selective,full</source>
        <translation>none,selective,full</translation>
    </message>
    <message>
        <source>e.g. 1,2,4,8</source>
        <translation>例如 1,2,4,8</translation>
    </message>
    <message>
        <source>&amp;Devices:</source>
        <translation>设备数(&amp;D)：</translation>
    </message>
    <message>
        <source>&amp;Global batch:</source>
        <translation>全局批大小(&amp;G)：</translation>
    </message>
    <message>
        <source>Device pre&amp;set:</source>
        <translation>设备预设(&amp;S)：</translation>
    </message>
    <message>
        <source>&amp;Rank top:</source>
        <translation>列出前(&amp;R)：</translation>
    </message>
    <message>
        <source>device count N, fixed for every candidate</source>
        <translation>设备数 N，所有候选都相同</translation>
    </message>
    <message>
        <source>global batch G in sequences, fixed for every candidate</source>
        <translation>全局批大小 G（序列数），所有候选都相同</translation>
    </message>
    <message>
        <source>how many of the fastest strategies that fit are listed (the Pareto front is always added)</source>
        <translation>列出多少个满足预算的最快策略（帕累托前沿总会加入）</translation>
    </message>
    <message>
        <source>device preset {0} is not installed</source>
        <translation>未安装设备预设 {0}</translation>
    </message>
    <message>
        <source>{0}: {1}</source>
        <translation>{0}：{1}</translation>
    </message>
    <message>
        <source>the plan&apos;s own degrees only</source>
        <translation>仅计划自身的并行度</translation>
    </message>
</context>
<context>
    <name>SearchTable</name>
    <message>
        <source>#</source>
        <translation>#</translation>
    </message>
    <message>
        <source>rank by step time among the strategies that fit (P: on the Pareto front only; *: the plan as opened, –* when it does not fit)</source>
        <translation>在满足预算的策略中按单步时间的排名（P：仅在帕累托前沿上；*：打开的计划，超出预算时为 –*）</translation>
    </message>
    <message>
        <source>vs best</source>
        <translation>对比最快</translation>
    </message>
    <message>
        <source>step time against the fastest strategy that fits, in per cent, with the decimals that tell rows apart where their step times round alike (the plans share the device&apos;s efficiencies, so their ratio is known better than either step time)</source>
        <translation>相对于满足预算的最快策略的单步时间（百分比），单步时间取整后相同的行也保留足以区分它们的小数位（这些方案共享设备的效率，其比值比任一单步时间都更可靠）</translation>
    </message>
    <message>
        <source>data-parallel degree</source>
        <translation>数据并行度</translation>
    </message>
    <message>
        <source>tensor-parallel degree</source>
        <translation>张量并行度</translation>
    </message>
    <message>
        <source>pipeline stages</source>
        <translation>流水线阶段数</translation>
    </message>
    <message>
        <source>virtual pipeline chunks per stage</source>
        <translation>每阶段的虚拟流水线块数</translation>
    </message>
    <message>
        <source>context-parallel degree</source>
        <translation>上下文并行度</translation>
    </message>
    <message>
        <source>expert-parallel degree</source>
        <translation>专家并行度</translation>
    </message>
    <message>
        <source>expert tensor-parallel degree</source>
        <translation>专家张量并行度</translation>
    </message>
    <message>
        <source>micro-batch size</source>
        <translation>微批次大小</translation>
    </message>
    <message>
        <source>micro-batches per step</source>
        <translation>每步微批次数</translation>
    </message>
    <message>
        <source>sequence parallel</source>
        <translation>序列并行</translation>
    </message>
    <message>
        <source>Recompute</source>
        <translation>重计算</translation>
    </message>
    <message>
        <source>recompute mode</source>
        <translation>重计算方式</translation>
    </message>
    <message>
        <source>Schedule</source>
        <translation>调度</translation>
    </message>
    <message>
        <source>pipeline schedule</source>
        <translation>流水线调度</translation>
    </message>
    <message>
        <source>model FLOPs utilisation against the device&apos;s dense BF16 peak (FP8 matmuls run above it: an FP8 plan can pass 100 %)</source>
        <translation>模型 FLOPs 利用率，相对于设备的稠密 BF16 峰值（FP8 矩阵乘法可超过该峰值：FP8 方案可能超过 100 %）</translation>
    </message>
    <message>
        <source>Peak GiB</source>
        <translation>峰值 GiB</translation>
    </message>
    <message>
        <source>peak memory per device, the optimizer step included</source>
        <translation>每卡峰值显存（含优化器步）</translation>
    </message>
    <message>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <source>the peak stage</source>
        <translation>峰值所在阶段</translation>
    </message>
    <message>
        <source>Step s</source>
        <translation>单步 s</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>selective</source>
        <translation>选择性</translation>
    </message>
    <message>
        <source>full</source>
        <translation>完全</translation>
    </message>
    <message>
        <source>per-stage</source>
        <translation>逐阶段</translation>
    </message>
    <message>
        <source>step time, seconds, with the low–high band the device&apos;s efficiency ranges give; sorted by the full value</source>
        <translation>单步时间（秒），括号内为设备效率范围给出的低–高区间；按完整数值排序</translation>
    </message>
    <message>
        <source>Tok/s/dev</source>
        <translation>每卡 tok/s</translation>
    </message>
    <message>
        <source>tokens per second per device</source>
        <translation>每卡每秒 token 数</translation>
    </message>
    <message>
        <source>Headroom GiB</source>
        <translation>余量 GiB</translation>
    </message>
    <message>
        <source>budget minus the peak</source>
        <translation>预算减去峰值</translation>
    </message>
    <message>
        <source>Pareto</source>
        <translation>帕累托</translation>
    </message>
    <message>
        <source>on the Pareto front of step time vs peak memory</source>
        <translation>位于单步时间—峰值显存的帕累托前沿上</translation>
    </message>
    <message>
        <source>The plan as opened, priced with its own layout and recompute</source>
        <translation>打开的计划，按其自身的层划分与重计算估算</translation>
    </message>
</context>
<context>
    <name>Selection</name>
    <message>
        <source>Click a bar segment (or select one with the arrow keys in the chart) to see how its number is computed.</source>
        <translation>点击柱形中的一段（或在图中用方向键选择），查看其数值的计算方式。</translation>
    </message>
    <message>
        <source>No layers to show: the plan cannot be priced (the reason is above).</source>
        <translation>没有可显示的层：该方案无法估算（原因见上方）。</translation>
    </message>
    <message>
        <source>Nothing is kept in host memory: no offload or swap.</source>
        <translation>主机内存中没有数据:未启用卸载或换出。</translation>
    </message>
    <message>
        <source>Host memory per node</source>
        <translation>每节点主机内存</translation>
    </message>
    <message>
        <source>Computing the trace of stage {0}, {1}…</source>
        <translation>正在计算阶段 {0}「{1}」的计算过程…</translation>
    </message>
    <message>
        <source>No trace for this stage.</source>
        <translation>该阶段没有计算过程。</translation>
    </message>
    <message>
        <source>Stage {0}</source>
        <translation>阶段 {0}</translation>
    </message>
    <message>
        <source>No trace: {0}</source>
        <translation>没有计算过程：{0}</translation>
    </message>
</context>
<context>
    <name>Stale</name>
    <message>
        <source>No estimate: this plan cannot be priced.</source>
        <translation>没有估算结果：该方案无法估算。</translation>
    </message>
    <message>
        <source>Estimating the plan in the forms… These numbers are of the previous plan ({0}).</source>
        <translation>正在估算表单中的计划…这些数字属于之前的计划（{0}）。</translation>
    </message>
    <message>
        <source>Not the plan in the forms: it cannot be priced. These numbers are of the last plan that could be ({0}).</source>
        <translation>不是表单中的计划：该计划无法估算。这些数字属于上一个可估算的计划（{0}）。</translation>
    </message>
    <message>
        <source>Not the plan in the forms: the last edit was not applied. These numbers are of the plan before it ({0}).</source>
        <translation>不是表单中的计划：上一次编辑未被应用。这些数字属于编辑前的计划（{0}）。</translation>
    </message>
</context>
<context>
    <name>StartPage</name>
    <message>
        <source>Drop a training config anywhere on this window (several files together: a launch script with its model.json, a TOML with its config.json), or open one. Every pipeline stage&apos;s memory is shown against the device, and you can try other parallel degrees, search the strategy space, balance the pipeline and see the schedule.</source>
        <translation>把训练配置文件拖到窗口任意位置（可同时拖入多个文件：启动脚本及其 model.json，或 TOML 及其 config.json），或者打开一个。每个流水线阶段的显存都会与设备容量对照显示；你还可以尝试其他并行度、搜索策略空间、均衡流水线并查看调度。</translation>
    </message>
    <message>
        <source>&amp;Open config…</source>
        <translation>打开配置文件(&amp;O)…</translation>
    </message>
    <message>
        <source>This config does not state the device count. &amp;Devices:</source>
        <translation>此配置未写明设备数。设备数(&amp;D)：</translation>
    </message>
    <message>
        <source>Open with this device count</source>
        <translation>按此设备数打开</translation>
    </message>
    <message>
        <source>Bundled examples</source>
        <translation>内置示例</translation>
    </message>
    <message>
        <source>Recent files</source>
        <translation>最近的文件</translation>
    </message>
    <message>
        <source>&amp;Examples (written in the frameworks&apos; own formats; export works on them)</source>
        <translation>示例(&amp;E)（采用各框架自身的格式，可直接导出）</translation>
    </message>
    <message>
        <source>&amp;Recent</source>
        <translation>最近(&amp;R)</translation>
    </message>
    <message>
        <source>No bundled examples found.</source>
        <translation>未找到内置示例。</translation>
    </message>
    <message>
        <source>({0} devices)</source>
        <translation>（{0} 个设备）</translation>
    </message>
    <message>
        <source>Nothing opened yet.</source>
        <translation>尚未打开任何文件。</translation>
    </message>
</context>
<context>
    <name>StepParts</name>
    <message>
        <source>forward</source>
        <translation>前向计算</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向计算</translation>
    </message>
    <message>
        <source>recompute</source>
        <translation>重计算</translation>
    </message>
    <message>
        <source>TP communication</source>
        <translation>TP 通信</translation>
    </message>
    <message>
        <source>CP communication</source>
        <translation>CP 通信</translation>
    </message>
    <message>
        <source>EP communication</source>
        <translation>EP 通信</translation>
    </message>
    <message>
        <source>DP communication</source>
        <translation>DP 通信</translation>
    </message>
    <message>
        <source>PP communication</source>
        <translation>PP 通信</translation>
    </message>
    <message>
        <source>host transfers</source>
        <translation>主机传输</translation>
    </message>
    <message>
        <source>FSDP communication</source>
        <translation>FSDP 通信</translation>
    </message>
    <message>
        <source>pipeline bubble</source>
        <translation>流水线气泡</translation>
    </message>
    <message>
        <source>optimizer step</source>
        <translation>优化器步</translation>
    </message>
</context>
<context>
    <name>Summary</name>
    <message>
        <source>offloaded activations</source>
        <translation>卸载的激活</translation>
    </message>
    <message>
        <source>optimizer states</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>Step time {0} per optimizer step</source>
        <translation>每个优化器步的时间 {0}</translation>
    </message>
    <message>
        <source>Verdict</source>
        <translation>结论</translation>
    </message>
    <message>
        <source>Peak</source>
        <translation>峰值</translation>
    </message>
    <message>
        <source>Headroom</source>
        <translation>余量</translation>
    </message>
    <message>
        <source>Step time</source>
        <translation>单步时间</translation>
    </message>
    <message>
        <source>Tokens/s/device</source>
        <translation>每卡 tokens/s</translation>
    </message>
    <message>
        <source>MFU</source>
        <translation>MFU</translation>
    </message>
    <message>
        <source>Devices</source>
        <translation>设备数</translation>
    </message>
    <message>
        <source>Global batch</source>
        <translation>全局批大小</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>参数量</translation>
    </message>
    <message>
        <source>Host memory</source>
        <translation>主机内存</translation>
    </message>
    <message>
        <source>optimizer step decides</source>
        <translation>由优化器步决定</translation>
    </message>
    <message>
        <source>peak decides</source>
        <translation>由峰值决定</translation>
    </message>
    <message>
        <source>Fits</source>
        <translation>满足预算</translation>
    </message>
    <message>
        <source>Does not fit</source>
        <translation>超出预算</translation>
    </message>
    <message>
        <source>stage {0}, tensors {1} GiB</source>
        <translation>阶段 {0}，张量 {1} GiB</translation>
    </message>
    <message>
        <source>, {0} GiB vs pinned</source>
        <translation>，相对基线 {0} GiB</translation>
    </message>
    <message>
        <source>Device peak {0} GiB (band {1}–{2} GiB): what the device shows, the optimizer step included. Tensor peak {3} GiB (max allocated), allocator peak {4} GiB (max reserved).</source>
        <translation>设备峰值 {0} GiB（区间 {1}–{2} GiB）：设备实际显示的值，含优化器步。张量峰值 {3} GiB（最大已分配），分配器峰值 {4} GiB（最大已保留）。</translation>
    </message>
    <message>
        <source>pool {0} GiB − allocator peak {1} GiB</source>
        <translation>内存池 {0} GiB − 分配器峰值 {1} GiB</translation>
    </message>
    <message>
        <source>device {0} GiB − peak</source>
        <translation>设备 {0} GiB − 峰值</translation>
    </message>
    <message>
        <source>budget {0} GiB</source>
        <translation>预算 {0} GiB</translation>
    </message>
    <message>
        <source>{0} active</source>
        <translation>激活参数 {0}</translation>
    </message>
    <message>
        <source>dense</source>
        <translation>稠密模型</translation>
    </message>
    <message>
        <source>No verdict</source>
        <translation>无结论</translation>
    </message>
    <message>
        <source>not the plan in the forms</source>
        <translation>不是表单中的计划</translation>
    </message>
    <message>
        <source>not priced</source>
        <translation>未估算</translation>
    </message>
    <message>
        <source>most: {0}</source>
        <translation>最大项：{0}</translation>
    </message>
    <message>
        <source>{0} vs pinned</source>
        <translation>相对基线 {0}</translation>
    </message>
    <message>
        <source>{0}–{1} s</source>
        <translation>{0}–{1} s</translation>
    </message>
    <message>
        <source>{0} tokens/s in all</source>
        <translation>全集群 {0} tokens/s</translation>
    </message>
    <message>
        <source>MFU of {0} peak</source>
        <translation>MFU（{0} 峰值）</translation>
    </message>
    <message>
        <source>Model FLOPs utilisation: the model&apos;s FLOPs per step ÷ (step time × devices × the device&apos;s dense {0} peak, {1} TFLOP/s).</source>
        <translation>模型 FLOPs 利用率：每步模型 FLOPs ÷（单步时间 × 设备数 × 设备的稠密 {0} 峰值 {1} TFLOP/s）。</translation>
    </message>
    <message>
        <source>This plan&apos;s FP8 matmuls run at up to {0}× that peak, so its MFU can pass 100 %.</source>
        <translation>该方案的 FP8 矩阵乘法最高可达该峰值的 {0} 倍，因此其 MFU 可能超过 100 %。</translation>
    </message>
    <message>
        <source>model FLOPs utilisation</source>
        <translation>模型算力利用率</translation>
    </message>
    <message>
        <source>{0} · FP8 runs above the {1} peak</source>
        <translation>{0} · FP8 超过 {1} 峰值</translation>
    </message>
    <message>
        <source>nothing offloaded</source>
        <translation>无卸载</translation>
    </message>
    <message>
        <source>{0} GiB per device × {1}</source>
        <translation>每卡 {0} GiB × {1}</translation>
    </message>
    <message>
        <source>{0}; the preset states no host RAM</source>
        <translation>{0};预设未给出主机内存</translation>
    </message>
    <message>
        <source>{0}; of {1} GiB RAM</source>
        <translation>{0};内存共 {1} GiB</translation>
    </message>
    <message>
        <source>{0} GiB/node</source>
        <translation>{0} GiB/节点</translation>
    </message>
    <message>
        <source>Host memory per node: per device {0}. Click for its Explain.</source>
        <translation>每节点主机内存:每卡 {0}。点击查看计算说明。</translation>
    </message>
    <message>
        <source>{0} · {1} · {2} · seq {3} · schedule {4}</source>
        <translation>{0} · {1} · {2} · 序列长度 {3} · 调度 {4}</translation>
    </message>
</context>
<context>
    <name>Workspace</name>
    <message>
        <source>Memory</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>Search</source>
        <translation>搜索</translation>
    </message>
    <message>
        <source>Compare</source>
        <translation>对比</translation>
    </message>
    <message>
        <source>Balance</source>
        <translation>均衡</translation>
    </message>
    <message>
        <source>Schedule</source>
        <translation>调度</translation>
    </message>
    <message>
        <source>Nothing estimated for the plan in the forms to compare yet</source>
        <translation>表单中的计划尚未估算，无法加入对比</translation>
    </message>
    <message>
        <source>Current</source>
        <translation>当前</translation>
    </message>
    <message>
        <source>Pin a baseline first (Edit ▸ Pin baseline)</source>
        <translation>请先固定基线（编辑 ▸ 固定基线）</translation>
    </message>
    <message>
        <source>Pinned baseline</source>
        <translation>固定基线</translation>
    </message>
    <message>
        <source>{0} added to Compare</source>
        <translation>已将{0}加入对比</translation>
    </message>
    <message>
        <source>Stage chart</source>
        <translation>阶段图</translation>
    </message>
    <message>
        <source>Layer chart</source>
        <translation>逐层图</translation>
    </message>
    <message>
        <source>Pareto chart (search)</source>
        <translation>帕累托图（搜索）</translation>
    </message>
    <message>
        <source>Selected strategy&apos;s stages (search)</source>
        <translation>选中策略的各阶段（搜索）</translation>
    </message>
    <message>
        <source>Compare chart</source>
        <translation>对比图</translation>
    </message>
    <message>
        <source>Balance chart</source>
        <translation>均衡图</translation>
    </message>
    <message>
        <source>Schedule timeline</source>
        <translation>调度时间线</translation>
    </message>
    <message>
        <source>Nothing estimated for the plan in the forms to report yet</source>
        <translation>表单中的计划尚未估算，无法生成报告</translation>
    </message>
    <message>
        <source>Report not written: {0}</source>
        <translation>报告未写入：{0}</translation>
    </message>
    <message>
        <source>Wrote {0}</source>
        <translation>已写入 {0}</translation>
    </message>
    <message>
        <source>File as written</source>
        <translation>文件原样</translation>
    </message>
    <message>
        <source>No translation for {0} is installed</source>
        <translation>未安装 {0} 的翻译</translation>
    </message>
</context>
</TS>
