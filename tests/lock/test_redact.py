"""Redaction: realistic secret shapes are masked, ordinary ML log text is left alone."""

from __future__ import annotations

import pytest

from pytest_faildiag.redact import MASK, is_secret_name, redact_env, redact_obj, redact_text

# (text, the secret part that must disappear, a part that must stay)
SECRETS = [
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJhbGciOiJIUzI1NiJ9", "Authorization: Bearer "),
    ("curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://api.example.com", "abcdefghijklmnop1234", "https://api.example.com"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA", "Authorization: Basic "),
    ("GITHUB_TOKEN=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "ghp_aBcDeF", "GITHUB_TOKEN="),
    ("pushing with github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789", "github_pat_11ABC", "pushing with"),
    ("remote: https://oauth2:glpat-abcdefghij0123456789@gitlab.com/group/x.git", "glpat-abcdefghij", "@gitlab.com/group/x.git"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345", "sk-proj-abcdef", "OPENAI_API_KEY"),
    ("client = Anthropic(api_key='sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789')", "sk-ant-api03", "Anthropic("),
    ("huggingface-cli login --token hf_abcdefghijklmnopqrstuvwxyzABCD", "hf_abcdefghij", "huggingface-cli login --token"),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "aws_secret_access_key"),
    ("posting to slack with xoxb-123456789012-1234567890123-abcdefghijklmnop", "xoxb-1234", "posting to slack"),
    ("DATABASE_URL=postgres://admin:s3cr3tPass@db.internal:5432/app", "s3cr3tPass", "admin:"),
    ("redis://:hunter2hunter2@cache:6379/0", "hunter2hunter2", "@cache:6379/0"),
    ("python train.py --password hunter2 --epochs 3", "hunter2", "--epochs 3"),
    ("python upload.py --api-key=abcd1234efgh", "abcd1234efgh", "python upload.py"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
     "b3BlbnNzaC1rZXkt", ""),
    ("GET https://api.example.com/v1/data?access_token=abc123def456&page=2", "abc123def456", "&page=2"),
    ("https://storage.example.com/blob?sig=abcdefghijklmnopqrstuvwxyz0123&se=2026", "abcdefghijklmnopqrstuvwxyz0123", "https://storage"),
    ('{"password": "p@ssw0rd!", "user": "bob"}', "p@ssw0rd!", '"user": "bob"'),
    ("DB_PASS=abc", "abc", "DB_PASS="),
    ("STRIPE_KEY=rk_live_abcdef", "rk_live_abcdef", "STRIPE_KEY="),
    ("const accessToken = 'abcdef123456'", "abcdef123456", "const accessToken"),
    ("x-api-key: 0123456789abcdef", "0123456789abcdef", "x-api-key"),
]

BENIGN = [
    "size mismatch for 0.weight: copying a param with shape torch.Size([10, 5]) from checkpoint",
    "model:\n  hidden_size: 768\n  key: value\n  num_layers: 12",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)",
    "tokenizer: bert-base-uncased",
    "tokenizer_name_or_path: /models/llama/tokenizer.model",
    "TOKENIZERS_PARALLELISM=false",
    "NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/IPC",
    "NCCL WARN Timeout: NCCL_IB_TIMEOUT=22 NCCL_SOCKET_IFNAME=eth0",
    "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)",
    "/home/user/.cache/huggingface/token",
    "max_tokens: 2048",
    "max_new_tokens=256",
    "pad_token: <pad>",
    "eos_token_id: 2",
    "Token indices sequence length is longer than the specified maximum sequence length for this model (600 > 512)",
    "author: Jane Doe",
    "--max-new-tokens 128",
    "tests passed: 3, failed: 1",
    "sort_key: name",
    'File "/app/auth/session.py", line 12, in login',
    "HF_TOKEN=$HF_TOKEN",
    "KeyError: 'input_ids'",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    "E  AssertionError: assert 0.5 == 0.6",
    "ImportError: numpy.core.multiarray failed to import",
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import torch",
    "git@github.com:org/repo.git",
    "https://pypi.org/simple/torch/",
    "HCCL_CONNECT_TIMEOUT=1200",
]


@pytest.mark.parametrize(("text", "secret", "kept"), SECRETS, ids=[s[0][:30] for s in SECRETS])
def test_realistic_secrets_are_masked(text, secret, kept):
    out = redact_text(text)
    assert secret not in out
    assert MASK in out
    assert kept in out


@pytest.mark.parametrize("text", BENIGN, ids=[b[:30] for b in BENIGN])
def test_ordinary_ml_log_text_is_left_alone(text):
    assert redact_text(text) == text


def test_bearer_keeps_its_scheme_word():
    assert redact_text("Authorization: Bearer abcdefghijklmnop") == f"Authorization: Bearer {MASK}"


def test_redaction_is_idempotent():
    once = redact_text("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCD and Authorization: Bearer abcdefghijklmnop")
    assert redact_text(once) == once


@pytest.mark.parametrize("name", ["HF_TOKEN", "GITHUB_TOKEN", "db_password", "AWS_SECRET_ACCESS_KEY", "WANDB_API_KEY",
                                  "STRIPE_KEY", "SENTRY_DSN", "accessToken", "Authorization", "proxy-authorization", "OAUTH_CLIENT_SECRET", "MYSQL_PASS", "GH_PAT"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "max_tokens", "pad_token", "token_ids", "author", "sort_key",
                                  "NCCL_DEBUG", "bypass_cache", "num_tokens", "PWD", "tokens", "keyboard", ""])
def test_ordinary_names(name):
    assert not is_secret_name(name)


def test_redact_env_masks_by_name_and_scrubs_values():
    env = redact_env({"HF_TOKEN": "anything", "NCCL_DEBUG": "INFO", "PIP_EXTRA": "https://u:pw123456@host/simple",
                      "AUTH_MODE": "none", "TOKENIZERS_PARALLELISM": "false"})
    assert env == {"HF_TOKEN": MASK, "NCCL_DEBUG": "INFO", "PIP_EXTRA": f"https://u:{MASK}@host/simple",
                   "AUTH_MODE": "none", "TOKENIZERS_PARALLELISM": "false"}


def test_redact_obj_walks_json_like_data():
    data = {"config": {"api_key": "abc123", "max_tokens": 10, "lr": 0.1, "authorization": "xyz", "author": "Jane"},
            "lines": ["ok", "token=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"], "n": None}
    out = redact_obj(data)
    assert out == {"config": {"api_key": MASK, "max_tokens": 10, "lr": 0.1, "authorization": MASK, "author": "Jane"}, "lines": ["ok", f"token={MASK}"], "n": None}


def test_redact_text_handles_empty_and_huge_input():
    assert redact_text("") == ""
    big = "NCCL INFO ok\n" * 50_000 + "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCD\n"
    assert "hf_abcdefghij" not in redact_text(big)
