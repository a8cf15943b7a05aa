"""Word-level Transformer language model (pytorch/examples word_language_model) on a synthetic corpus.

Manual SGD update (`p.data.add_(p.grad, alpha=-lr)`) after `clip_grad_norm_`, as in the example. The
vocabulary and batch size default to Wikitext-2's 33278 words and 20 on cuda, and to 1000 words and 10 on
the CPU.
Writes one wall time per training iteration (seconds) to ./iteration_times.txt, and the
process's CPU time per iteration to ./iteration_cpu_times.txt.
"""
import argparse
import math
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from workload_common import IterationTimer, add_common_arguments
except ModuleNotFoundError:  # run in place: the shared module is in workloads/ (the runner's copies have it beside)
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from workload_common import IterationTimer, add_common_arguments


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        x = x + self.pe[: x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Module):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        encoder_layers = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers, enable_nested_tensor=False)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self._generate_square_subsequent_mask(len(src)).to(device)
        else:
            self.src_mask = None
        src = self.encoder(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


def synthetic_corpus(num_tokens, vocab_size, generator):
    """Token ids with a Zipf-like unigram distribution, as natural text has."""
    weights = 1.0 / torch.arange(1, vocab_size + 1, dtype=torch.float)
    return torch.multinomial(weights, num_tokens, replacement=True, generator=generator)


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def main():
    parser = argparse.ArgumentParser(description="Transformer language model on a synthetic corpus")
    add_common_arguments(parser, default_seed=1111)
    parser.add_argument("--vocab-size", type=int, default=None, help="default: 33278 on cuda, 1000 on cpu")
    parser.add_argument("--corpus-tokens", type=int, default=20000)
    parser.add_argument("--emsize", type=int, default=200)
    parser.add_argument("--nhid", type=int, default=200)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--nhead", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--lr", type=float, default=20.0)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--batch-size", type=int, default=None, help="default: 20 on cuda, 10 on cpu")
    parser.add_argument("--bptt", type=int, default=35)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    ntokens = args.vocab_size or (33278 if on_gpu else 1000)
    corpus = synthetic_corpus(args.corpus_tokens, ntokens, torch.Generator().manual_seed(args.seed))
    batch_size = args.batch_size or (20 if on_gpu else 10)
    train_data = batchify(corpus, batch_size, device)

    model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout).to(device)
    criterion = nn.NLLLoss()
    lr = args.lr

    with IterationTimer(args.times_file, args.cpu_times_file, device) as timer:
        iteration = 0
        while iteration < args.iters:
            model.train()
            for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
                with timer.iteration():
                    data, targets = get_batch(train_data, i, args.bptt)
                    model.zero_grad()
                    output = model(data)
                    output = output.view(-1, ntokens)
                    loss = criterion(output, targets)
                    loss.backward()
                    # `clip_grad_norm` helps prevent the exploding gradient problem.
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                    for p in model.parameters():
                        p.data.add_(p.grad, alpha=-lr)
                iteration += 1
                if iteration >= args.iters:
                    break
    print(f"transformer: {iteration} iterations, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
