"""Knowledge distillation: a wide teacher MLP is trained first, then frozen (eval mode, requires_grad off,
forward under no_grad), and a small student learns from a mix of the hard labels and the teacher's
temperature-softened distribution (KL divergence, T=2); SGD with momentum for the teacher, Adam for the
student with a CosineAnnealingWarmRestarts schedule."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--teacher-steps", type=int, default=15)
    parser.add_argument("--student-steps", type=int, default=15)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.7)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    w = torch.randn(16, 6)

    def batch():
        x = torch.randn(64, 16)
        return x, (x @ w + 0.5 * torch.randn(64, 6)).argmax(1)

    teacher = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 128), nn.ReLU(),
                            nn.Linear(128, 6))
    student = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 6))

    opt_t = torch.optim.SGD(teacher.parameters(), lr=0.05, momentum=0.9)
    teacher.train()
    for step in range(args.teacher_steps):
        x, y = batch()
        loss_t = F.cross_entropy(teacher(x), y)
        opt_t.zero_grad()
        loss_t.backward()
        opt_t.step()
    print(f"teacher loss {loss_t.item():.4f}")

    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt_s = torch.optim.Adam(student.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt_s, T_0=5)
    T = args.temperature
    student.train()
    for step in range(args.student_steps):
        x, y = batch()
        with torch.no_grad():
            soft_targets = F.softmax(teacher(x) / T, dim=1)
        logits = student(x)
        distill = F.kl_div(F.log_softmax(logits / T, dim=1), soft_targets, reduction="batchmean") * T * T
        loss = args.alpha * distill + (1 - args.alpha) * F.cross_entropy(logits, y)
        opt_s.zero_grad()
        loss.backward()
        opt_s.step()
        scheduler.step()
        if step % 5 == 0:
            print(f"student step {step}: loss {loss.item():.4f}")
    print(f"FINAL teacher_loss={loss_t.item():.6f} student_loss={loss.item():.6f}")


if __name__ == "__main__":
    main()
