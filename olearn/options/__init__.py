"""The option registry, the validated Config, the front ends' own options and the option-string
parser."""
