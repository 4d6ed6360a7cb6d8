"""The monitor inside Lightning and the Hugging Face Trainer: one 20-step run recorded through raw
hooks, the Lightning callback and the HF callback gives bit-identical Adam split arrays; the
adapters find the optimizer the framework built, handle gradient accumulation and detach."""

from __future__ import annotations

import logging
import os
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from gaugedyn.monitor import MemorySink, Monitor

STEPS, BATCH, N = 20, 16, 640
LR, BETAS, EPS, WD = 1e-2, (0.9, 0.99), 1e-8, 0.01


class Net(nn.Module):
    """A small MLP returning its loss as the Hugging Face models do."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))

    def forward(self, x, labels=None):
        out = self.body(x)
        loss = None if labels is None else nn.functional.mse_loss(out, labels)
        return {"loss": loss, "logits": out}


class Data(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(N, 6, generator=g)
        self.y = torch.randn(N, 1, generator=g)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def groups(model):
    """The Hugging Face Trainer's AdamW groups: decay on weights, none on biases."""
    named = list(model.named_parameters())
    return [
        {"params": [p for n, p in named if "bias" not in n], "weight_decay": WD},
        {"params": [p for n, p in named if "bias" in n], "weight_decay": 0.0},
    ]


def make_optimizer(model):
    return torch.optim.AdamW(groups(model), lr=LR, betas=BETAS, eps=EPS)


def loader():
    return torch.utils.data.DataLoader(Data(), batch_size=BATCH, shuffle=False)


KW = {"adam": {"every": 1, "backend": "eager"}, "gauge": False, "spikes": False}


def raw_run(accumulate: int = 1):
    model = Net()
    opt = make_optimizer(model)
    sink = MemorySink()
    mon = Monitor(opt, model, sinks=[sink], **KW)
    batches = iter(loader())
    for _ in range(STEPS):
        opt.zero_grad()
        for _ in range(accumulate):
            b = next(batches)
            out = model(b["x"], b["labels"])
            (out["loss"] / accumulate).backward()
            mon.observe_loss(out["loss"])
        opt.step()
    mon.detach()
    return mon, sink, opt


def lightning_run(accumulate: int = 1, precision: str = "32-true"):
    L = pytest.importorskip("lightning.pytorch")
    from gaugedyn.monitor import LightningMonitor

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = Net()

        def training_step(self, batch, batch_idx):
            return self.net(batch["x"], batch["labels"])["loss"]

        def configure_optimizers(self):
            return make_optimizer(self.net)

    sink = MemorySink()
    cb = LightningMonitor(sinks=[sink], **KW)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = L.Trainer(
            max_steps=STEPS,
            accelerator="cpu",
            devices=1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            accumulate_grad_batches=accumulate,
            precision=precision,
            num_sanity_val_steps=0,
            callbacks=[cb],
        )
        module = Module()
        trainer.fit(module, loader())
    return cb.monitor, sink, trainer.optimizers[0]


def hf_run(accumulate: int = 1, bind: bool = True, tmp=None):
    transformers = pytest.importorskip("transformers")
    from gaugedyn.monitor import HFMonitor

    class Sequential(transformers.Trainer):
        def _get_train_sampler(self, *args, **kwargs):
            return torch.utils.data.SequentialSampler(self.train_dataset)

    transformers.logging.set_verbosity_error()
    args = transformers.TrainingArguments(
        output_dir=str(tmp),
        max_steps=STEPS,
        per_device_train_batch_size=BATCH,
        gradient_accumulation_steps=accumulate,
        learning_rate=LR,
        adam_beta1=BETAS[0],
        adam_beta2=BETAS[1],
        adam_epsilon=EPS,
        weight_decay=WD,
        optim="adamw_torch",
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        seed=0,
        dataloader_num_workers=0,
    )
    model = Net()
    sink = MemorySink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = Sequential(model=model, args=args, train_dataset=Data())
        cb = HFMonitor(sinks=[sink], **KW)
        if bind:
            cb.trainer = trainer
        trainer.add_callback(cb)
        trainer.train()
    return cb.monitor, sink, trainer.optimizer


def _same(a, b):
    (xa, _), (xb, _) = a.export(), b.export()
    assert sorted(xa) == sorted(xb)
    for k in xa:
        np.testing.assert_array_equal(xa[k], xb[k], err_msg=k)


@pytest.fixture(scope="module")
def raw():
    return raw_run()


def test_raw_hooks_record_every_step_and_detach(raw):
    mon, sink, opt = raw
    arrays, meta = mon.export()
    assert arrays["adam_step"].tolist() == list(range(1, STEPS + 1))
    assert arrays["adam_norms"].shape == (STEPS, 2, 7)
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    steps, loss = sink.series("gaugedyn/loss")
    assert steps.tolist() == list(range(1, STEPS + 1)) and np.all(loss > 0)


def test_lightning_callback_gives_the_raw_split_bit_for_bit(raw, tmp_path):
    mon, sink, opt = lightning_run()
    _same(raw[0], mon)
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    np.testing.assert_array_equal(
        sink.series("gaugedyn/loss")[1], raw[1].series("gaugedyn/loss")[1]
    )


def test_hf_callback_gives_the_raw_split_bit_for_bit(raw, tmp_path):
    mon, sink, opt = hf_run(tmp=tmp_path)
    _same(raw[0], mon)
    from gaugedyn.monitor._hf import unwrap

    inner = unwrap(opt)
    assert not inner._optimizer_step_pre_hooks and not inner._optimizer_step_post_hooks
    np.testing.assert_array_equal(
        sink.series("gaugedyn/loss")[1], raw[1].series("gaugedyn/loss")[1]
    )


def test_hf_callback_without_a_bound_trainer(tmp_path):
    """transformers #38181: callbacks may get optimizer=None; unbound, the callback either
    finds it in the hook's arguments or stops with the way out."""
    from gaugedyn import InputError

    try:
        mon, _, _ = hf_run(bind=False, tmp=tmp_path)
    except InputError as err:
        assert "HFMonitor.attach(trainer)" in str(err)
    else:
        assert len(mon.adam) == STEPS


@pytest.mark.parametrize("framework", ["lightning", "hf"])
def test_gradient_accumulation_matches_the_raw_accumulated_loop(framework, tmp_path):
    raw_mon, raw_sink, _ = raw_run(accumulate=2)
    mon, sink, _ = (
        lightning_run(accumulate=2)
        if framework == "lightning"
        else hf_run(accumulate=2, tmp=tmp_path)
    )
    a, b = raw_mon.export()[0], mon.export()[0]
    assert b["adam_step"].tolist() == list(range(1, STEPS + 1))
    np.testing.assert_allclose(b["adam_norms"], a["adam_norms"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        sink.series("gaugedyn/loss")[1], raw_sink.series("gaugedyn/loss")[1], rtol=1e-6
    )


def test_lightning_bf16_mixed_records_the_split_in_the_optimizer_dtype():
    mon, _, opt = lightning_run(precision="bf16-mixed")
    arrays, meta = mon.export()
    assert all(st["exp_avg"].dtype == torch.float32 for st in opt.state.values())
    assert arrays["adam_norms"].shape == (STEPS, 2, 7) and np.isfinite(arrays["adam_norms"]).all()
    assert os.environ.get("WANDB_MODE") in (None, "offline", "disabled")


def test_hf_callback_handed_optimizer_none_takes_the_bound_trainers():
    """transformers #38181: where the Trainer hands callbacks optimizer=None, an unbound callback
    says how to bind it, and a bound one unwraps the trainer's optimizer."""
    from types import SimpleNamespace

    pytest.importorskip("transformers")
    from gaugedyn import InputError
    from gaugedyn.monitor import HFMonitor

    model = Net()
    opt = make_optimizer(model)
    state = SimpleNamespace(global_step=3)
    cb = HFMonitor(gauge=False, spikes=False)
    cb.on_train_begin(None, state, None, model=model, optimizer=None)
    with pytest.raises(InputError, match=r"HFMonitor.attach\(trainer\)"):
        cb.on_step_begin(None, state, None, model=model, optimizer=None)
    cb.trainer = SimpleNamespace(optimizer=SimpleNamespace(optimizer=opt), model=model)
    cb.on_step_begin(None, state, None, model=model, optimizer=None)
    assert cb.monitor.optimizer is opt and cb.monitor.step == 3
    cb.on_train_end(None, state, None)
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
