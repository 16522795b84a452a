# Baseline on the GPU machine: PyTorch's scaled_dot_product_attention in fp32 (TF32 off), the
# benchmark shapes; kernel-only (tensors resident) and with host<->device copies (what an attngen
# call with host buffers pays). Median of timed runs after warm-up.
import statistics, time, torch
import torch.nn.functional as F
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
shapes = [(1, 8, 512, 512, 64), (1, 8, 2048, 2048, 64), (1, 16, 1024, 1024, 128), (4, 8, 256, 256, 64), (1, 32, 1, 4096, 128)]
print("torch", torch.__version__, torch.cuda.get_device_name(0))
for (B, H, Lq, Lk, D) in shapes:
    for causal in (False, True):
        if Lq == 1 and causal:
            continue  # bottom-right causal with one query sees every key: same as none
        g = torch.Generator().manual_seed(0)
        qh, kh, vh = (torch.randn(B, H, L, D, generator=g) for L in (Lq, Lk, Lk))
        q, k, v = qh.to(dev), kh.to(dev), vh.to(dev)
        flops = 4.0 * B * H * Lq * Lk * D * (0.5 if causal else 1.0)
        def kernel():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        def with_copies():
            o = F.scaled_dot_product_attention(qh.to(dev), kh.to(dev), vh.to(dev), is_causal=causal)
            return o.cpu()
        for name, fn in (("kernel", kernel), ("with_copies", with_copies)):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(15):
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            t = statistics.median(times)
            print(f"torch_sdpa_fp32 {name:12s} {B}x{H}x{Lq}x{Lk}x{D} {'causal' if causal else 'none':6s} "
                  f"{t*1e3:9.3f} ms {flops/t/1e9:9.1f} GFLOP/s")
