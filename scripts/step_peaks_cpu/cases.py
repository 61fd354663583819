"""The cases scripts/step_peaks_cpu measures: a PyTorch model, its data, loss and optimizer, and the
tally command line that describes the same training step (fp32 on the CPU)."""
import importlib.machinery
import importlib.util
import os
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def conformance():
    """scripts/conformance as a module, for its GPT-2 and Llama builders."""
    path = os.path.join(ROOT, "scripts", "conformance")
    loader = importlib.machinery.SourceFileLoader("conformance", path)
    spec = importlib.util.spec_from_loader("conformance", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@dataclass
class Case:
    name: str
    build: object          # torch -> (model, sample): sample ("tokens", V, n) or a per-sample shape
    batch: int             # samples per optimizer step (all micro-batches together)
    tally_model: str       # preset or config path under ROOT
    optimizer: str = "adamw"   # adamw | adam | sgd-momentum
    impl: str = "for-loop"     # for-loop | foreach
    accum: int = 1             # micro-batches per step (gradient accumulation)
    loss: str = "cross-entropy"  # cross-entropy | mse (against zeros)
    tally_flags: list = field(default_factory=list)
    note: str = ""

    def tally_args(self):
        """tally's arguments after the binary, with the flags the peak needs (--optimizer-impl, --get
        memory.train.peak) left to the caller."""
        args = ["memory", self.tally_model, "--precision", "fp32", "--batch", str(self.batch)]
        args += self.tally_flags + ["--optimizer", self.optimizer, "--optimizer-impl", self.impl]
        if self.accum > 1:
            args += ["--grad-accum", str(self.accum)]
        return args + ["--dropout-mask", "cpu", "--format", "json"]

    def make_optimizer(self, torch, params):
        foreach = self.impl == "foreach"
        if self.optimizer == "adamw":
            return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=foreach)
        if self.optimizer == "adam":
            return torch.optim.Adam(params, lr=1e-3, foreach=foreach)
        if self.optimizer == "sgd-momentum":
            return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach)
        raise ValueError(self.optimizer)


def mlp3(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 4096)), (4096,)


def torchvision_model(name):
    def make(torch):
        import torchvision
        return getattr(torchvision.models, name)(weights=None, num_classes=1000), (3, 224, 224)
    return make


def gpt2_small(**kw):
    """GPT-2 small as GPT2LMHeadModel: 12 blocks, vocab 50257, width 768, 12 heads, 1024 positions
    (and a 1024 x 1024 causal mask buffer per block, as transformers registers it), 128 tokens."""
    return lambda torch: conformance().gpt2_lm(torch, V=50257, n=128, h=768, a=12, f=3072, p=0.1, layers=12,
                                                positions=1024, **kw)


def llama_gqa(layers):
    """scripts/conformance's toy Llama with 2 key/value heads for its 4 query heads, 128 tokens."""
    return lambda torch: conformance().llama_lm(torch, n=128, kv=2, layers=layers)


MLP3 = os.path.join("scripts", "step_peaks_cpu", "configs", "mlp3.yaml")
GPT2 = ["--seq", "128", "--attention", "eager"]
LLAMA = ["--seq", "128", "--attention", "eager", "--mlp-kernel", "eager"]


def llama_config(layers):
    return os.path.join("scripts", "step_peaks_cpu", "configs", f"llama-gqa-{layers}l.yaml")


CASES = [
    Case("mlp3", mlp3, 8, MLP3, loss="mse"),
    Case("mlp3-adamw-foreach", mlp3, 8, MLP3, impl="foreach", loss="mse"),
    Case("mlp3-sgd-momentum", mlp3, 8, MLP3, optimizer="sgd-momentum", loss="mse"),
    Case("mlp3-adam", mlp3, 8, MLP3, optimizer="adam", loss="mse", note="Adam without weight decay"),
    Case("alexnet", torchvision_model("alexnet"), 2, "alexnet"),
    Case("resnet18", torchvision_model("resnet18"), 2, "resnet18"),
    Case("mobilenet-v2", torchvision_model("mobilenet_v2"), 2, "mobilenet-v2"),
    Case("vit-b-16", torchvision_model("vit_b_16"), 1, "vit-b-16"),
    Case("gpt2-block", lambda torch: conformance().gpt2_block(torch), 2, "tests/data/graphs/gpt2-block.yaml",
         tally_flags=["--attention", "eager"], note="scripts/conformance's toy block, 16 tokens"),
    Case("gpt2-small", gpt2_small(), 1, "gpt2-small", tally_flags=GPT2),
    Case("gpt2-small-accum2", gpt2_small(), 2, "gpt2-small", accum=2, tally_flags=GPT2,
         note="2 micro-batches of 1"),
    Case("gpt2-small-recompute", gpt2_small(recompute=True), 1, "gpt2-small",
         tally_flags=GPT2 + ["--recompute", "full"], note="each block under checkpoint(use_reentrant=False)"),
    Case("llama-gqa-1l", llama_gqa(1), 2, llama_config(1), tally_flags=LLAMA),
    Case("llama-gqa-4l", llama_gqa(4), 2, llama_config(4), tally_flags=LLAMA),
]
BY_NAME = {c.name: c for c in CASES}
