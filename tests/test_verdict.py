"""Verdict rules driven with literal figures: no model runs."""
from tcdoctor.verdict import RULES, graph_break_advice, recommend


def _train_row(name, speedup, lo, passed, err=None):
    return {"name": name, "median_s": 1e-3 / speedup, "eager_median_s": 1e-3, "speedup": speedup,
            "speedup_ci": [lo, lo + 0.05], "first_call_s": 10.0, "numerics_passed": passed, "max_abs_err": err}


def test_faster_ways_that_fail_numerics_are_named_not_called_slower():
    data = {"strategies": {"training": [
        {"name": "eager", "median_s": 1e-3, "eager_median_s": 1e-3, "speedup": 1.0, "speedup_ci": None},
        _train_row("step", 1.39, 1.35, False, 0.0084), _train_row("model", 1.10, 1.08, False, 0.003)]}}
    text = recommend(data, dict(RULES))["training"]["text"]
    assert "no way of compiling it is measurably faster" not in text
    assert "1.39× faster but fails the numerics check (max abs error 0.0084)" in text


def test_a_faster_way_that_passes_is_recommended():
    data = {"strategies": {"training": [
        {"name": "eager", "median_s": 1e-3, "eager_median_s": 1e-3, "speedup": 1.0, "speedup_ci": None},
        _train_row("step", 1.39, 1.35, True), _train_row("model", 1.5, 1.45, False, 0.1)]}}
    rec = recommend(data, dict(RULES))["training"]
    assert rec["choice"] == "step" and rec["text"].startswith("compile the whole training step")


BREAK = {"reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "file": "/u/model.py", "line": 19,
         "code": "h = self.encoder(x, mask=mask)", "hints": ["Set `torch._dynamo.config.capture_scalar_outputs = True`"],
         "occurrences": 1}


def test_break_in_users_code_gets_a_fix_for_that_line():
    text = graph_break_advice({**BREAK, "origin": "user"})
    assert text.startswith("Graph break at /u/model.py:19") and "keep the value a tensor" in text


def test_break_in_torch_never_tells_the_user_to_edit_torch():
    f = {**BREAK, "origin": "pytorch", "origin_text": "PyTorch itself", "library": "torch",
         "site": {"file": "/site-packages/torch/nn/modules/transformer.py", "line": 1245, "function": "_detect_is_causal_mask"}}
    text = graph_break_advice(f)
    assert "keep the value a tensor" not in text and "Fix:" not in text
    assert "reached from /u/model.py:19" in text and "is_causal=True" in text and "for that code's authors" in text


def test_break_in_the_optimizer_points_at_the_optimizer_recipe():
    f = {**BREAK, "reason": "Call to `torch._dynamo.graph_break()`", "hints": ["Remove the `torch._dynamo.graph_break()` call."],
         "origin": "pytorch", "origin_text": "PyTorch itself", "library": "torch",
         "site": {"file": "/site-packages/torch/optim/optimizer.py", "line": 79, "function": "_use_grad"}}
    text = graph_break_advice(f)
    assert "optimizer.step` separately" in text and "torch.compiler.disable" in text
    assert not text.split("From your side:")[1].split("PyTorch's hint")[0].strip().startswith("Remove")
