fn main() {
    println!("nvcf-validate: CLI being written");
}
