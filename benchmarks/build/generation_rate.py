"""Token-generation rate of the llama_cpp importable in this interpreter (run it with a venv's python).

Usage: generation_rate.py MODEL THREADS TOKENS REPEATS
Prints JSON: per repeat the decode rate (tokens after the first over the time they took, timed
in-process, so no HTTP buffering is involved) and llama.cpp's system info (the ISA it was built for).
"""

import json
import sys
import time

import llama_cpp


def decode_rate(llm, tokens):
    arrivals = []
    for dummy_chunk in llm.create_completion("The inference server says", max_tokens=tokens, stream=True, temperature=0.0):
        arrivals.append(time.perf_counter())
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])


def main():
    model, threads, tokens, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    llm = llama_cpp.Llama(model_path=model, n_threads=threads, n_threads_batch=threads, n_ctx=512,
                          logits_all=False, verbose=False)
    decode_rate(llm, 8)  # warm-up: page the weights in
    print(json.dumps({
        "system_info": llama_cpp.llama_print_system_info().decode(),
        "rates": [round(decode_rate(llm, tokens), 2) for dummy_repeat in range(repeats)],
    }))


if __name__ == "__main__":
    main()
