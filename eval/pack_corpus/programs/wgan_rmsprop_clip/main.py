"""A Wasserstein GAN as in the original paper: a convolutional critic trained n_critic=3 times per
generator step with RMSprop, its weights clipped to [-0.01, 0.01] after each critic step (in place on
p.data), the generator trained through the frozen critic (requires_grad toggled) on synthetic 1x8x8
"images" of gradients."""
import argparse

import torch
import torch.nn as nn


def real_batch(n):
    ramp = torch.linspace(-1, 1, 8)
    direction = torch.randint(0, 2, (n, 1, 1, 1)).float()
    img = direction * ramp.view(1, 1, 1, 8) + (1 - direction) * ramp.view(1, 1, 8, 1)
    return img + 0.05 * torch.randn(n, 1, 8, 8)


class Generator(nn.Module):
    def __init__(self, latent=16):
        super().__init__()
        self.fc = nn.Linear(latent, 32 * 2 * 2)
        self.net = nn.Sequential(nn.BatchNorm2d(32), nn.ReLU(), nn.ConvTranspose2d(32, 16, 4, 2, 1),
                                 nn.BatchNorm2d(16), nn.ReLU(), nn.ConvTranspose2d(16, 1, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 32, 2, 2))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(16, 32, 4, 2, 1),
                                 nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(32 * 2 * 2, 1))

    def forward(self, x):
        return self.net(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--generator-steps", type=int, default=8)
    parser.add_argument("--n-critic", type=int, default=3)
    parser.add_argument("--clip", type=float, default=0.01)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    generator, critic = Generator(), Critic()
    opt_g = torch.optim.RMSprop(generator.parameters(), lr=5e-4)
    opt_c = torch.optim.RMSprop(critic.parameters(), lr=5e-4)

    for g_step in range(args.generator_steps):
        for p in critic.parameters():
            p.requires_grad = True
        for _ in range(args.n_critic):
            real = real_batch(32)
            with torch.no_grad():
                fake = generator(torch.randn(32, 16))
            loss_c = critic(fake).mean() - critic(real).mean()
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
            for p in critic.parameters():
                p.data.clamp_(-args.clip, args.clip)

        for p in critic.parameters():
            p.requires_grad = False
        loss_g = -critic(generator(torch.randn(32, 16))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        print(f"generator step {g_step}: critic {loss_c.item():.5f} generator {loss_g.item():.5f}")
    print(f"FINAL loss_c={loss_c.item():.6f} loss_g={loss_g.item():.6f}")


if __name__ == "__main__":
    main()
