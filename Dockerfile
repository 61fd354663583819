# tally in a container, from Debian's own packages (Debian 12, the release the project is built and
# tested on; every package below is in bookworm/main). Nothing else is downloaded.
#
#   docker build -t tally .
#   docker run --rm tally estimate gpt2-small
#   docker run --rm -v "$PWD:/work" -w /work tally params path/to/config.json
#
# The build compiles tally: about 7 CPU-minutes, 4 minutes on 2 idle cores (docs/ci.md, "Docker").

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake g++ ninja-build libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libopenblas-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The tests (doctest-dev, scripts/test) are not built here: the image is the tool.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
 && cmake --build /build --target tally \
 && cmake --install /build --prefix /usr/local

# The run-time image: yaml-cpp's library, and OpenBLAS, which `tally measure` opens at run time.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libyaml-cpp0.7 libopenblas0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/tally /usr/local/bin/tally
RUN useradd --create-home tally
USER tally
WORKDIR /home/tally
ENTRYPOINT ["tally"]
CMD ["--help"]
