import torch


class RunState:
    def __init__(self):
        self.epoch = 3


def main():
    torch.save({"weights": torch.nn.Linear(4, 2).state_dict(), "state": RunState()}, "run.pt")
    ckpt = torch.load("run.pt")
    print(ckpt["state"].epoch)


if __name__ == "__main__":
    main()
