"""absl's logging.warning with exc_info: a handled failure to read an optional file, then the run goes on."""
from absl import app, logging


def main(argv):
    del argv
    try:
        with open("/nonexistent/vocab_extra.txt") as f:
            f.read()
    except OSError:
        logging.warning("optional extra vocabulary not found, skipping", exc_info=True)
    logging.info("training for %d steps", 3)
    for step in range(3):
        logging.info("step %d loss=%.3f", step, 1.0 / (step + 1))


if __name__ == "__main__":
    app.run(main)
