"""Device-level memory (issue 10): what the device holds beyond live tensors — the caching allocator's slack
(``allocator`` replayed on the ``trace`` of a stage's tensors), the runtime context and library workspaces (the
device preset), and the communication libraries' buffers (``communicators``). ``memory`` holds the rules,
``stage_terms`` adds them to every stage through the assembler; ``knobs`` reads the launch scripts' environment
variables that change them."""
