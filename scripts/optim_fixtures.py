"""Trajectories of torch.optim's SGD, Adam and LBFGS on two problems with known minima,
written as crates/cotangent/tests/fixtures/optim.json for tests/optim.rs.

Problems (f64): the Rosenbrock function from (-1.5, 2) (minimum (1, 1)), and least
squares ||A x - b||² with a fixed 4x2 A and b (two parameters: x, and a 0-d offset c added
to every residual). Each run records the loss returned by every step, the parameters
after it, and its sensitivity: how far the parameters move when a coordinate of the start
is moved by one ulp (late L-BFGS steps on Rosenbrock amplify roundoff; the test's tolerance grows with it). Run with a PyTorch install: /tmp/torch/bin/python scripts/optim_fixtures.py
"""

import json
import os

import torch

torch.set_default_dtype(torch.float64)

A = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25], [-2.0, 1.5]])
B = torch.tensor([1.0, -2.0, 0.5, 3.0])


def rosenbrock(ps):
    (x,) = ps
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def lsq(ps):
    x, c = ps
    r = A @ x + c - B
    return (r * r).sum()


PROBLEMS = {
    "rosenbrock": (rosenbrock, lambda: [torch.tensor([-1.5, 2.0])]),
    "lsq": (lsq, lambda: [torch.tensor([0.3, -0.2]), torch.tensor(0.1)]),
}

RUNS = [
    ("sgd", "lsq", {"lr": 0.01}, 30),
    ("sgd", "lsq", {"lr": 0.01, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}, 30),
    ("sgd", "lsq", {"lr": 0.01, "momentum": 0.8, "nesterov": True}, 30),
    ("sgd", "rosenbrock", {"lr": 1e-4, "momentum": 0.9, "maximize": False}, 30),
    ("adam", "lsq", {"lr": 0.05}, 40),
    ("adam", "lsq", {"lr": 0.05, "betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.1, "amsgrad": True}, 40),
    ("adam", "rosenbrock", {"lr": 0.02}, 40),
    ("lbfgs", "rosenbrock", {}, 3),
    ("lbfgs", "rosenbrock", {"line_search_fn": "strong_wolfe"}, 3),
    ("lbfgs", "rosenbrock", {"line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 7}, 4),
    ("lbfgs", "lsq", {"line_search_fn": "strong_wolfe", "lr": 0.5}, 2),
    ("lbfgs", "lsq", {"lr": 0.1, "max_iter": 5}, 3),
]

CLASSES = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "lbfgs": torch.optim.LBFGS}


def trajectory(name, prob, kw, steps, nudge=None):
    f, init = PROBLEMS[prob]
    ps = [p.requires_grad_() for p in init()]
    if nudge is not None:
        # one coordinate of the start moved by one ulp: how much roundoff the trajectory
        # amplifies
        i, towards = nudge
        with torch.no_grad():
            flat = ps[0].view(-1)
            flat[i] = torch.nextafter(flat[i], torch.tensor(towards))
    opt = CLASSES[name](ps, **{k: (tuple(v) if k == "betas" else v) for k, v in kw.items()})

    def closure():
        opt.zero_grad()
        loss = f(ps)
        loss.backward()
        return loss

    traj = []
    for _ in range(steps):
        loss = opt.step(closure)
        traj.append({"loss": float(loss.detach()), "params": [p.detach().reshape(-1).tolist() for p in ps]})
    return opt, ps, traj


def main():
    out = []
    for name, prob, kw, steps in RUNS:
        init = PROBLEMS[prob][1]
        opt, ps, traj = trajectory(name, prob, kw, steps)
        for a in traj:
            a["sensitivity"] = 0.0
        for nudge in [(0, 10.0), (0, -10.0), (1, 10.0), (1, -10.0)]:
            _, _, nudged = trajectory(name, prob, kw, steps, nudge=nudge)
            for a, b in zip(traj, nudged):
                d = max(abs(x - y) for pa, pb in zip(a["params"], b["params"]) for x, y in zip(pa, pb))
                a["sensitivity"] = max(a["sensitivity"], d)
        extra = {}
        if name == "lbfgs":
            st = opt.state[ps[0]]
            extra = {"func_evals": st["func_evals"], "n_iter": st["n_iter"]}
        out.append({"optimizer": name, "problem": prob, "settings": kw, "init": [p.reshape(-1).tolist() for p in init()], "steps": traj, **extra})
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "cotangent", "tests", "fixtures", "optim.json")
    with open(path, "w") as fh:
        json.dump({"torch": torch.__version__, "runs": out}, fh, indent=1)
        fh.write("\n")
    print(f"{len(out)} runs -> {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
