/** @cairn/cli: the `cairn` command, to list, inspect, watch and steer runs from a terminal or a local web page. */
export {};
