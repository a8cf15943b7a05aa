"""Tensor digests (traincheck.tracking.digest): coverage of every element, and the original's hash."""
import pytest
import torch

from traincheck.tracking.digest import Digester


def test_equal_tensors_give_equal_digests_across_digester_instances():
    a = torch.randn(64, 33)
    assert Digester().digests([a])[0] == Digester().digests([a.clone()])[0]
    # A large tensor first (growing the weight cache) must not change a small tensor's digest.
    d = Digester()
    small = torch.randn(10)
    before = d.digests([small])[0]
    d.digests([torch.randn(100000)])
    assert d.digests([small])[0] == before


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool])
def test_a_one_element_change_anywhere_changes_the_full_digest(dtype):
    generator = torch.Generator().manual_seed(0)
    values = torch.arange(6 * 7 * 5) % 2 if dtype == torch.bool else torch.randn(6 * 7 * 5, generator=generator) * 100
    base = values.to(dtype).reshape(6, 7, 5)
    d = Digester()
    reference = d.digests([base])[0]
    for index in [(0, 0, 0), (5, 6, 4), (3, 2, 1)]:
        changed = base.clone()
        # Not `+ 1`: above 256 a bfloat16's spacing is 2, so adding 1 can round back to the same value.
        changed[index] = (~changed[index]) if dtype == torch.bool else (1 if changed[index] == 0 else 0)
        assert not torch.equal(changed, base), index
        assert d.digests([changed])[0] != reference, index


def test_the_original_hash_sees_only_the_first_row_which_is_why_it_is_not_the_default():
    base = torch.randn(4, 8)
    changed = base.clone()
    changed[3, 5] += 1.0
    original = Digester("traincheck")
    assert original.digests([base])[0] == original.digests([changed])[0]
    full = Digester("full")
    assert full.digests([base])[0] != full.digests([changed])[0]


def test_the_original_hash_reproduces_its_test_vectors():
    d = Digester("traincheck")
    assert d.digests([torch.tensor([42])]) == [43]
    assert d.digests([torch.tensor(42)]) == [43]
    assert d.digests([torch.tensor([0.5, -1.25], dtype=torch.float32)]) == [2669640192147450990]


def test_the_original_hash_matches_a_reference_loop_on_a_matrix():
    x = torch.randn(3, 5)
    rows = (x * 1e8).to(torch.int64).tolist()
    h = 0
    for v in rows[0]:
        h = (h * 6364136223846793005 + v + 1) & ((1 << 64) - 1)
    expected = h - (1 << 64) if h >= 1 << 63 else h
    assert Digester("traincheck").digests([x]) == [expected]


def test_unknown_algorithm_is_rejected():
    with pytest.raises(ValueError, match="unknown tensor hash"):
        Digester("md5")


def test_chunked_cpu_digest_of_a_large_tensor_equals_the_one_piece_dot_product_and_sees_its_last_element():
    d = Digester()
    t = torch.randn(300, 1000)  # more than one CPU chunk
    bits = t.reshape(-1).view(torch.int32).to(torch.int64)
    assert d.digests([t])[0] == (bits * d._weights_for(bits.numel(), t.device)).sum().item()
    changed = t.clone()
    changed[-1, -1] += 1
    assert d.digests([changed])[0] != d.digests([t])[0]


def test_batched_digests_of_small_tensors_equal_their_one_by_one_digests():
    tensors = [torch.randn(5, 3), torch.randn(7), torch.randn(2, 2).half(), torch.arange(4), torch.randn(3).double(), torch.randn(6)]
    d = Digester()
    batched = d.digests(tensors)
    assert batched == [d.digests([t])[0] for t in tensors]
    assert batched == d.digests(tensors)  # the cached layout gives the same again
    changed = [t.clone() for t in tensors]
    changed[5][-1] += 1
    assert d.digests(changed)[5] != batched[5] and d.digests(changed)[:5] == batched[:5]


def test_a_tensor_longer_than_the_weight_table_is_digested_with_periodic_weights_times_block_multipliers():
    d = Digester()
    d._TABLE, d._CHUNK = 1024, 256  # small, so that the test is quick: the rule is the same at any size
    t = torch.randn(3000)
    bits = t.view(torch.int32).to(torch.int64)
    table = d._weights_for(1024, t.device)
    weights = torch.cat([table * Digester._block_multiplier(k) if k else table for k in range(3)])[:3000]
    assert d.digests([t])[0] == (bits * weights).sum().item()
    changed = t.clone()
    changed[-1] += 1
    assert d.digests([changed])[0] != d.digests([t])[0]
    # Two elements a table apart hold different weights: swapping them changes the digest.
    swapped = t.clone()
    swapped[5], swapped[5 + 1024] = t[5 + 1024], t[5]
    assert d.digests([swapped])[0] != d.digests([t])[0]


def test_the_original_hash_taken_in_pieces_equals_it_taken_whole():
    whole, pieces = Digester("traincheck"), Digester("traincheck")
    pieces._HASH_CHUNK = 100
    for t in (torch.randn(1050), torch.randn(4, 333), torch.arange(250)):
        assert pieces.digests([t]) == whole.digests([t])


@pytest.mark.parametrize("algorithm", ["full", "traincheck"])
def test_a_sparse_gradient_is_digested_by_its_entries_whatever_their_order(algorithm):
    embedding = torch.nn.Embedding(50, 8, sparse=True)  # its gradient is a sparse COO tensor: nothing to view
    embedding(torch.tensor([1, 2, 2, 7])).sum().backward()
    grad = embedding.weight.grad
    reordered = torch.sparse_coo_tensor(grad._indices().flip(1), grad._values().flip(0), grad.shape)
    d = Digester(algorithm)
    first, same, doubled, dense = d.digests([grad, reordered, grad * 2, embedding.weight])
    assert first == same and first != doubled
    assert dense == d.digests([embedding.weight])[0]


def test_small_tensors_beyond_one_batch_are_digested_in_several_with_the_same_results():
    d = Digester()
    d._CHUNK = 50
    tensors = [torch.randn(7) for _ in range(20)]
    assert d.digests(tensors) == [Digester().digests([t])[0] for t in tensors]


MEMORY_PROBE = """
import resource, sys, torch
from traincheck.tracking.digest import Digester
# 512 MiB: a digest taken in one piece would make int64 temporaries of 1 GiB each, far past the bound.
t = torch.empty(128 * 1024 * 1024, dtype=torch.float32).fill_(1.5)
t[-1] = 2.0
d = Digester("full" if sys.argv[1] == "full-torch-ops" else sys.argv[1])
d._in_place = sys.argv[1] == "full"  # the torch ops take host tensors too: their pieces are what is bounded
d.digests([torch.ones(3)])  # torch's first operations' own set-up is not the digests'
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
d.digests([t])
d.digests([t.view(1024, -1)])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


@pytest.mark.parametrize("algorithm", ["full", "full-torch-ops", "traincheck"])
def test_digesting_a_512_mib_tensor_takes_at_most_64_mib_more(algorithm):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", MEMORY_PROBE, algorithm], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.strip()) <= 64, result.stdout


def _torch_ops_digests(tensors, table=None):
    """The digests as the torch ops compute them, the in-place host path off."""
    d = Digester()
    d._in_place = False
    if table is not None:
        d._TABLE, d._CHUNK = table
    return d.digests(tensors)


HOST_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
               torch.int8, torch.uint8, torch.bool] + [getattr(torch, n) for n in ("uint16", "uint32", "uint64",
                                                                                   "float8_e4m3fn", "float8_e5m2")
                                                       if hasattr(torch, n)]


@pytest.mark.parametrize("dtype", HOST_DTYPES, ids=str)
def test_host_tensors_digested_in_place_equal_the_torch_ops_digests(dtype):
    generator = torch.Generator().manual_seed(3)
    def make(n):
        values = torch.randint(-(1 << 62), 1 << 62, (n,), generator=generator, dtype=torch.int64)
        if dtype == torch.bool:  # a bool's byte is 0 or 1
            return (values % 2).bool()
        width = torch.empty(0, dtype=dtype).element_size()
        return values.view(torch.int8)[: n * width].view(dtype)  # any bit pattern, NaNs and negatives included

    tensors = [make(n) for n in (0, 1, 5, 1000, 70000)] + [make(24).reshape(2, 3, 4), torch.nn.Parameter(make(9), requires_grad=False)]
    in_place = Digester()
    assert in_place.digests(tensors) == _torch_ops_digests(tensors)
    assert not in_place._host_digests().digests(tensors, in_place._weights_for(in_place._TABLE, torch.device("cpu")))[1]


def test_in_place_digests_cross_the_weight_tables_blocks_as_the_torch_ops_do():
    d = Digester()
    d._TABLE, d._CHUNK = 1024, 256
    tensors = [torch.randn(3000), torch.arange(5000, dtype=torch.int16), torch.randn(1024)]
    assert d.digests(tensors) == _torch_ops_digests(tensors, table=(1024, 256))


def test_tensors_the_host_path_cannot_read_in_place_are_left_to_the_torch_ops_with_the_same_digests():
    class Marked(torch.Tensor):
        pass

    base = torch.randn(6, 5)
    embedding = torch.nn.Embedding(10, 3, sparse=True)
    embedding(torch.tensor([1, 4])).sum().backward()
    others = [base.t(), base[:, ::2], base.as_subclass(Marked), torch.randn(4, dtype=torch.complex64),
              embedding.weight.grad, torch.empty(3, device="meta")]
    tensors = [base] + others
    d = Digester()
    values, rest = d._host_digests().digests(tensors, d._weights_for(d._TABLE, torch.device("cpu")))
    assert rest == list(range(1, len(tensors)))
    assert d.digests(tensors) == _torch_ops_digests(tensors)
    # A strided view is digested by the elements it shows, in order: as its contiguous copy is.
    assert d.digests([base.t()]) == d.digests([base.t().contiguous()])


def test_a_tensor_whose_storage_was_freed_digests_to_zero_in_place_and_nothing_is_read():
    base = torch.randn(10)
    view = base[2:]  # elements 8 bytes into the storage
    other = torch.randn(6)
    d = Digester()
    before = d.digests([view, other])
    assert before[0] == d.digests([view.clone()])[0] and before[0] != 0
    base.untyped_storage().resize_(0)  # as FSDP frees a parameter's storage between uses; torch's ops would crash
    assert d.digests([view, base, other]) == [0, 0, before[1]]
